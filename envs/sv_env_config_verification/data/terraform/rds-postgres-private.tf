variable "db_password" {
  type      = string
  sensitive = true
}

resource "aws_db_subnet_group" "orders" {
  name       = "orders"
  subnet_ids = ["subnet-0a1b2c3d", "subnet-4e5f6a7b"]
}

resource "aws_db_instance" "orders" {
  identifier                = "orders-prod"
  engine                    = "postgres"
  engine_version            = "16.4"
  instance_class            = "db.m6g.large"
  allocated_storage         = 100
  db_subnet_group_name      = aws_db_subnet_group.orders.name
  username                  = "orders"
  password                  = var.db_password
  storage_encrypted         = true
  kms_key_id                = "arn:aws:kms:eu-west-1:111122223333:key/rds-orders"
  publicly_accessible       = false
  backup_retention_period   = 14
  deletion_protection       = true
  skip_final_snapshot       = false
  final_snapshot_identifier = "orders-prod-final"
}

resource "aws_db_instance" "legacy_crm" {
  identifier          = "legacy-crm"
  engine              = "mariadb"
  instance_class      = "db.t3.small"
  allocated_storage   = 20
  username            = "crm"
  password            = var.crm_password
  publicly_accessible = false
  storage_encrypted   = false
  skip_final_snapshot = true
}

variable "crm_password" {
  type      = string
  sensitive = true
}

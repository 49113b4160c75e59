resource "aws_db_instance" "reporting" {
  identifier          = "reporting"
  engine              = "mysql"
  engine_version      = "8.0"
  instance_class      = "db.t3.medium"
  allocated_storage   = 50
  username            = "admin"
  password            = var.reporting_password
  publicly_accessible = true
  storage_encrypted   = true
  skip_final_snapshot = true
}

variable "reporting_password" {
  type      = string
  sensitive = true
}

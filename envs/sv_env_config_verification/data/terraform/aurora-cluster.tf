resource "aws_rds_cluster" "events" {
  cluster_identifier      = "events"
  engine                  = "aurora-postgresql"
  engine_version          = "15.4"
  master_username         = "events"
  master_password         = var.events_password
  storage_encrypted       = true
  kms_key_id              = "arn:aws:kms:eu-west-1:111122223333:key/aurora-events"
  backup_retention_period = 7
  deletion_protection     = true
}

variable "events_password" {
  type      = string
  sensitive = true
}

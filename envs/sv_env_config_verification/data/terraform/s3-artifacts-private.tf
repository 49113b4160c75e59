variable "environment" {
  type    = string
  default = "prod"
}

resource "aws_s3_bucket" "artifacts" {
  bucket = "acme-${var.environment}-build-artifacts"
  acl    = "private"

  versioning {
    enabled = true
  }

  server_side_encryption_configuration {
    rule {
      apply_server_side_encryption_by_default {
        sse_algorithm     = "aws:kms"
        kms_master_key_id = aws_kms_key.artifacts.arn
      }
    }
  }

  tags = {
    Environment = var.environment
    Team        = "platform"
  }
}

resource "aws_kms_key" "artifacts" {
  description             = "Build artifacts"
  deletion_window_in_days = 30
  enable_key_rotation     = true
}

resource "aws_s3_bucket_public_access_block" "artifacts" {
  bucket                  = aws_s3_bucket.artifacts.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

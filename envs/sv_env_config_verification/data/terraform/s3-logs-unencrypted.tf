resource "aws_s3_bucket" "access_logs" {
  bucket = "acme-alb-access-logs"
  acl    = "log-delivery-write"

  lifecycle_rule {
    id      = "expire"
    enabled = true

    expiration {
      days = 90
    }
  }
}

resource "aws_s3_bucket_public_access_block" "access_logs" {
  bucket                  = aws_s3_bucket.access_logs.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

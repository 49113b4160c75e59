resource "aws_s3_bucket" "uploads" {
  bucket = "acme-partner-uploads"
  acl    = "public-read-write"

  server_side_encryption_configuration {
    rule {
      apply_server_side_encryption_by_default {
        sse_algorithm = "AES256"
      }
    }
  }
}

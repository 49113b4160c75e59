resource "aws_s3_bucket" "website" {
  bucket = "acme-marketing-site"
  acl    = "public-read"

  website {
    index_document = "index.html"
    error_document = "404.html"
  }
}

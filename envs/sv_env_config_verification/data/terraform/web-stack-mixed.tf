resource "aws_security_group" "web" {
  name        = "web"
  description = "Public web tier"
  vpc_id      = "vpc-0a1b2c3d"

  ingress {
    description = "https"
    from_port   = 443
    to_port     = 443
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }
}

resource "aws_ebs_volume" "web_cache" {
  availability_zone = "eu-west-1a"
  size              = 50
  encrypted         = true
}

resource "aws_s3_bucket" "web_uploads" {
  bucket = "acme-web-uploads"
  acl    = "private"
}

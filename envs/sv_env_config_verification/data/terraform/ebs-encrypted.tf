variable "availability_zone" {
  type    = string
  default = "eu-west-1a"
}

resource "aws_ebs_volume" "elasticsearch_data" {
  availability_zone = var.availability_zone
  size              = 200
  type              = "gp3"
  encrypted         = true
  kms_key_id        = "arn:aws:kms:eu-west-1:111122223333:key/3f2a9c1e-ebs"

  tags = {
    Name = "elasticsearch-data"
  }
}

resource "aws_ebs_volume" "scratch" {
  availability_zone = "eu-west-1b"
  size              = 500
  type              = "st1"

  tags = {
    Name = "etl-scratch"
  }
}

resource "aws_volume_attachment" "scratch" {
  device_name = "/dev/sdh"
  volume_id   = aws_ebs_volume.scratch.id
  instance_id = "i-0a1b2c3d4e5f67890"
}

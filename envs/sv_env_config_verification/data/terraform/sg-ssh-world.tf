resource "aws_security_group" "legacy_ssh" {
  name        = "legacy-ssh"
  description = "Temporary SSH access"
  vpc_id      = "vpc-0a1b2c3d"

  ingress {
    description = "ssh"
    from_port   = 22
    to_port     = 22
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }
}

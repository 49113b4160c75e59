resource "aws_security_group" "bastion" {
  name        = "bastion"
  description = "SSH from the office VPN only"
  vpc_id      = "vpc-0a1b2c3d"

  ingress {
    description = "ssh from office"
    from_port   = 22
    to_port     = 22
    protocol    = "tcp"
    cidr_blocks = ["203.0.113.0/24"]
  }

  egress {
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["10.0.0.0/8"]
  }
}

resource "aws_security_group" "db" {
  name        = "db-debug"
  description = "Opened during an incident"
  vpc_id      = "vpc-0a1b2c3d"

  ingress {
    from_port        = 0
    to_port          = 65535
    protocol         = "tcp"
    cidr_blocks      = ["0.0.0.0/0"]
    ipv6_cidr_blocks = ["::/0"]
  }
}

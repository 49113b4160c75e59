resource "aws_security_group" "windows" {
  name        = "windows-jump"
  description = "Windows jump host"
  vpc_id      = "vpc-0a1b2c3d"
}

resource "aws_security_group_rule" "rdp" {
  type              = "ingress"
  from_port         = 3389
  to_port           = 3389
  protocol          = "tcp"
  cidr_blocks       = ["0.0.0.0/0"]
  security_group_id = aws_security_group.windows.id
}

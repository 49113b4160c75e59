resource "aws_security_group" "app" {
  name        = "app"
  description = "App servers reachable from the load balancer subnets"
  vpc_id      = "vpc-0a1b2c3d"

  ingress {
    description = "http from the ALB subnets"
    from_port   = 8080
    to_port     = 8080
    protocol    = "tcp"
    cidr_blocks = ["10.0.1.0/24", "10.0.2.0/24"]
  }
}

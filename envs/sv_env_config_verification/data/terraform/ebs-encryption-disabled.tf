resource "aws_ebs_volume" "jenkins_home" {
  availability_zone = "us-east-1a"
  size              = 100
  encrypted         = false

  tags = {
    Name = "jenkins-home"
  }
}

resource "aws_iam_user_policy" "etl" {
  name = "etl-s3"
  user = "etl-runner"

  policy = <<EOF
{
  "Version": "2012-10-17",
  "Statement": [
    {
      "Effect": "Allow",
      "Action": ["s3:*"],
      "Resource": "*"
    }
  ]
}
EOF
}

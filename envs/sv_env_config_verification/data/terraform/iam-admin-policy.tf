resource "aws_iam_policy" "ci_admin" {
  name        = "ci-admin"
  description = "Lets CI do everything"

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect   = "Allow"
      Action   = "*"
      Resource = "*"
    }]
  })
}

resource "aws_iam_policy" "artifact_reader" {
  name        = "artifact-reader"
  description = "Read build artifacts"

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect   = "Allow"
      Action   = ["s3:GetObject", "s3:ListBucket"]
      Resource = ["arn:aws:s3:::acme-prod-build-artifacts", "arn:aws:s3:::acme-prod-build-artifacts/*"]
    }]
  })
}

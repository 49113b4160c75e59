resource "aws_iam_role" "lambda_thumbnails" {
  name = "lambda-thumbnails"

  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Action    = "sts:AssumeRole"
      Principal = { Service = "lambda.amazonaws.com" }
    }]
  })
}

resource "aws_iam_role_policy" "lambda_thumbnails" {
  name = "thumbnails"
  role = aws_iam_role.lambda_thumbnails.id

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect   = "Allow"
      Action   = ["s3:GetObject", "s3:PutObject"]
      Resource = "arn:aws:s3:::acme-media/*"
    }]
  })
}

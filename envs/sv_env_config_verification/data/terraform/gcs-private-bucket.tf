resource "google_storage_bucket" "invoices" {
  name                        = "acme-invoices-eu"
  location                    = "EU"
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  versioning {
    enabled = true
  }
}

resource "google_storage_bucket_iam_member" "invoices_reader" {
  bucket = google_storage_bucket.invoices.name
  role   = "roles/storage.objectViewer"
  member = "serviceAccount:billing@acme-prod.iam.gserviceaccount.com"
}

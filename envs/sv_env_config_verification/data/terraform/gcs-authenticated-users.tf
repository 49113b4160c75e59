resource "google_storage_bucket" "exports" {
  name     = "acme-analytics-exports"
  location = "EU"
}

resource "google_storage_bucket_iam_binding" "exports_readers" {
  bucket  = google_storage_bucket.exports.name
  role    = "roles/storage.objectViewer"
  members = ["allAuthenticatedUsers"]
}

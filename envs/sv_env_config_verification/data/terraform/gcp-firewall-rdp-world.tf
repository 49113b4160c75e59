resource "google_compute_firewall" "windows_rdp" {
  name      = "windows-rdp"
  network   = "corp-vpc"
  direction = "INGRESS"

  allow {
    protocol = "tcp"
    ports    = ["3389"]
  }

  source_ranges = ["0.0.0.0/0"]
}

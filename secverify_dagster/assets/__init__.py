"""Software-defined assets: corpora → curated splits → synthetic sets → eval results → reports."""

"""E4 labelled raw email: .eml directories, maildirs and mbox files with a label file become items, derived like
every corpus, and every kind of bad input gets its named error or is skipped and reported."""

from __future__ import annotations

import json
import mailbox
from pathlib import Path

import polars as pl
import pytest

from sv_env_phishing_detection import detectors, raw_mail
from sv_env_phishing_detection.data import LoadReport
from sv_shared.registry import get_environment

PHISH = """Return-Path: <bounce@paypa1-secure.top>
Authentication-Results: mx.example.net; spf=pass smtp.mailfrom=paypa1-secure.top; dmarc=fail header.from=paypal.com
From: PayPal <service@paypal.com>
To: someone@example.org
Subject: Your account is limited
Message-ID: <phish-1@paypa1-secure.top>
Content-Type: text/plain; charset="utf-8"

Verify your password within 24 hours: http://paypa1-secure.top/login
"""
BENIGN = """From: Ana Ruiz <ana@example.com>
To: someone@example.org
Subject: Lunch on Friday?
Message-ID: <lunch-2@example.com>
Content-Type: text/plain; charset="utf-8"

Shall we meet at noon at the usual place?
"""


def _eml_dir(tmp_path: Path, labels: str, name: str = "labels.csv") -> Path:
    folder = tmp_path / "mail"
    folder.mkdir()
    (folder / "a.eml").write_text(PHISH, encoding="utf-8")
    (folder / "sub").mkdir()
    (folder / "sub" / "b.eml").write_text(BENIGN, encoding="utf-8")
    (folder / name).write_text(labels, encoding="utf-8")
    return folder


def test_eml_directory_items_are_derived_like_every_corpus(tmp_path: Path) -> None:
    folder = _eml_dir(tmp_path, "file,label\na.eml,phishing\nsub/b.eml,Benign\n")
    frame = raw_mail.load_labelled(folder)
    by_label = dict(zip(frame["label"], frame["raw_email"], strict=True))
    assert sorted(by_label) == ["Legitimate", "Phishing"]
    assert by_label["Phishing"] == PHISH
    row = frame.filter(pl.col("label") == "Phishing").row(0, named=True)
    assert row["source_corpus"] == raw_mail.CORPUS and row["scenario"] == "unspecified" and row["language"] == "en"
    fields = detectors.item_fields(PHISH)
    assert {key: row[key] for key in fields} == fields


def test_labels_by_message_id_in_jsonl_and_bare_file_names(tmp_path: Path) -> None:
    labels = "\n".join(
        [
            json.dumps({"message_id": "phish-1@paypa1-secure.top", "label": "phish"}),
            json.dumps({"file": "b.eml", "label": "ham"}),
        ]
    )
    frame = raw_mail.load_labelled(_eml_dir(tmp_path, labels, "labels.jsonl"))
    assert sorted(frame["label"]) == ["Legitimate", "Phishing"]


def test_mbox_with_label_file_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "inbox.mbox"
    box = mailbox.mbox(path)
    box.add(PHISH)
    box.add(BENIGN)
    box.close()
    (tmp_path / "inbox.mbox.labels.csv").write_text(
        "file,message_id,label\ninbox.mbox:1,,phishing\n,<lunch-2@example.com>,benign\n", encoding="utf-8"
    )
    assert raw_mail.is_raw_mail(path)
    assert sorted(raw_mail.load_labelled(path)["label"]) == ["Legitimate", "Phishing"]


def test_maildir_by_unique_name(tmp_path: Path) -> None:
    root = tmp_path / "Maildir"
    box = mailbox.Maildir(root)
    first = box.add(PHISH)
    box.add(BENIGN)
    box.close()
    (root / "tmp" / "half-delivered").write_text("From: x@example.com\n\npartial", encoding="utf-8")
    (root / "labels.csv").write_text(
        f"file,message_id,label\n{first},,phishing\n,lunch-2@example.com,benign\n", encoding="utf-8"
    )
    frame = raw_mail.load_labelled(root)
    assert frame.height == 2


def test_unknown_label_is_a_named_error_naming_the_row(tmp_path: Path) -> None:
    folder = _eml_dir(tmp_path, "file,label\na.eml,phishing\nsub/b.eml,spam\n")
    with pytest.raises(raw_mail.UnknownLabelError, match=r"line 3: 'spam'"):
        raw_mail.load_labelled(folder)


def test_message_without_label_is_a_named_error(tmp_path: Path) -> None:
    folder = _eml_dir(tmp_path, "file,label\na.eml,phishing\n")
    with pytest.raises(raw_mail.MissingLabelError, match=r"sub/b\.eml"):
        raw_mail.load_labelled(folder)


def test_label_naming_no_message_is_a_named_error(tmp_path: Path) -> None:
    folder = _eml_dir(tmp_path, "file,label\na.eml,phishing\nsub/b.eml,benign\nc.eml,benign\n")
    with pytest.raises(raw_mail.UnmatchedLabelError, match=r"line 4 \(c.eml\)"):
        raw_mail.load_labelled(folder)


def test_disagreeing_labels_are_a_named_error(tmp_path: Path) -> None:
    folder = _eml_dir(
        tmp_path, "file,message_id,label\na.eml,,phishing\n,phish-1@paypa1-secure.top,benign\nsub/b.eml,,benign\n"
    )
    with pytest.raises(raw_mail.ConflictingLabelError, match=r"a\.eml"):
        raw_mail.load_labelled(folder)


def test_unparseable_message_is_skipped_and_reported_the_rest_loads(tmp_path: Path) -> None:
    folder = _eml_dir(tmp_path, "file,label\na.eml,phishing\nsub/b.eml,benign\nbroken.eml,phishing\nempty.eml,benign\n")
    (folder / "broken.eml").write_bytes(b"\x00\x01 this is no email at all\n")
    (folder / "empty.eml").write_bytes(b"")
    report = LoadReport(source=str(folder))
    frame = raw_mail.load_labelled(folder, report=report)
    assert frame.height == 2
    assert report.dropped == {"empty message": 1, "not an RFC 5322 message (no header lines)": 1}
    assert "broken.eml" in report.summary()


def test_missing_label_file_is_a_named_error(tmp_path: Path) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    (folder / "a.eml").write_text(PHISH, encoding="utf-8")
    with pytest.raises(raw_mail.LabelFileError, match=r"labels\.csv"):
        raw_mail.load_labelled(folder)


def test_environment_load_path_reads_raw_mail_and_leaves_items_files_to_the_runner(tmp_path: Path) -> None:
    data = get_environment("e4").data
    folder = _eml_dir(tmp_path, "file,label\na.eml,phishing\nsub/b.eml,benign\n")
    frame = data.load_path(folder)
    assert frame is not None and data.validate(frame).height == 2
    items = tmp_path / "items.jsonl"
    items.write_text("{}\n", encoding="utf-8")
    assert data.load_path(items) is None


def test_eval_command_takes_a_labelled_mail_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from secverify_dagster.cli.main import main

    monkeypatch.setenv("SECVERIFY_OUTPUTS", str(tmp_path / "outputs"))
    folder = _eml_dir(tmp_path, "file,label\na.eml,phishing\nsub/b.eml,benign\n")
    assert main(["eval", "--env", "e4", "--dataset", str(folder), "--models", "phish-rules", "-n", "2"]) == 0
    assert f"dataset {folder}" in capsys.readouterr().out
    (run_dir,) = (tmp_path / "outputs" / "evals" / "sv-env-phishing-detection--phish-rules").iterdir()
    assert (run_dir / "results.jsonl").read_text(encoding="utf-8").count("\n") == 2
    (folder / "labels.csv").write_text("file,label\na.eml,phishing\nsub/b.eml,spam?\n", encoding="utf-8")
    assert main(["eval", "--env", "e4", "--dataset", str(folder), "--models", "phish-rules", "-n", "2"]) == 2
    assert "label outside" in capsys.readouterr().err


SAVED_WITH_FROM_LINE = "From - Mon Jan  1 00:00:00 2024\n" + BENIGN
"""One message as some mail clients save it: an mbox "From " separator line first, so it is read as an mbox."""


def test_a_single_file_read_as_an_mbox_names_its_label_file_and_label_keys(tmp_path: Path) -> None:
    path = tmp_path / "saved.eml"
    path.write_text(SAVED_WITH_FROM_LINE, encoding="utf-8")
    assert raw_mail.is_raw_mail(path)
    with pytest.raises(raw_mail.LabelFileError) as error:
        raw_mail.load_labelled(path)
    message = str(error.value)
    assert (
        "saved.eml.labels.csv" in message
        and 'saved.eml starts with a "From " line, so it is read as an mbox' in message
    )
    assert "`label` column (phishing or benign)" in message and "`saved.eml:1`" in message and "`message_id`" in message


def test_a_message_file_read_as_an_mbox_says_which_file_key_labels_it(tmp_path: Path) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    (folder / "saved.eml").write_text(SAVED_WITH_FROM_LINE, encoding="utf-8")
    (folder / "labels.csv").write_text("file,label\nsaved.eml,benign\n", encoding="utf-8")
    with pytest.raises(raw_mail.MissingLabelError) as error:
        raw_mail.load_labelled(folder)
    message = str(error.value)
    assert "saved.eml message 1 (a row names it by file `saved.eml:1` or message_id `lunch-2@example.com`" in message
    assert 'saved.eml starts with a "From " line, so it is read as an mbox' in message
    (folder / "labels.csv").write_text("file,label\nsaved.eml:1,benign\n", encoding="utf-8")
    assert raw_mail.load_labelled(folder)["label"].to_list() == ["Legitimate"]


def test_a_row_naming_an_mbox_file_as_a_whole_is_told_the_names_of_its_messages(tmp_path: Path) -> None:
    path = tmp_path / "inbox.mbox"
    box = mailbox.mbox(path)
    box.add(PHISH)
    box.add(BENIGN)
    box.close()
    labels = (
        "file,message_id,label\ninbox.mbox,,phishing\n,phish-1@paypa1-secure.top,phishing\n,lunch-2@example.com,ham\n"
    )
    (tmp_path / "inbox.mbox.labels.csv").write_text(labels, encoding="utf-8")
    with pytest.raises(raw_mail.UnmatchedLabelError) as error:
        raw_mail.load_labelled(path)
    assert 'line 2 (inbox.mbox starts with a "From " line, so it is read as an mbox' in str(error.value)
    assert "name its messages `inbox.mbox:1` to `inbox.mbox:2`" in str(error.value)


def test_a_message_without_a_label_is_told_its_file_and_message_id_keys(tmp_path: Path) -> None:
    folder = _eml_dir(tmp_path, "file,label\na.eml,phishing\n")
    with pytest.raises(raw_mail.MissingLabelError, match=r"by file `sub/b\.eml` or message_id `lunch-2@example\.com`"):
        raw_mail.load_labelled(folder)


@pytest.mark.parametrize(
    ("header", "problem"),
    [("filename,label", "names its message by `file` or `message_id`"), ("file,verdict", "no `label` column")],
)
def test_label_file_columns_named_otherwise_name_the_columns_found_and_needed(
    tmp_path: Path, header: str, problem: str
) -> None:
    folder = _eml_dir(tmp_path, f"{header}\na.eml,phishing\nsub/b.eml,benign\n")
    with pytest.raises(raw_mail.LabelFileError) as error:
        raw_mail.load_labelled(folder)
    message = str(error.value)
    assert "labels.csv line 2" in message and problem in message
    assert str(sorted(header.split(","))) in message and "`label` column (phishing or benign)" in message


def test_a_single_file_that_is_not_an_mbox_is_a_named_error(tmp_path: Path) -> None:
    path = tmp_path / "one.eml"
    path.write_text(BENIGN, encoding="utf-8")
    assert not raw_mail.is_raw_mail(path)
    with pytest.raises(raw_mail.MessagesPathError, match=r"one\.eml: .*put message files in a directory"):
        list(raw_mail.read_messages(path))

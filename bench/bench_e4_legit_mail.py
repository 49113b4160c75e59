"""E4 sender_spoofing on legitimate mail nobody here wrote, and `phish-rules` on the shipped data (figures, not
pass/fail), under the previous sender rule and the weighed one.

- previous rule: a Return-Path of another organisation than From's was spoofing unless DMARC-style alignment vouched
  for From or an authenticated mailing list relayed the message (or From was a brand's domain and authentication
  failed); it is re-applied here from the detectors' public pieces, so both rules run on the same messages;
- weighed rule (detectors.sender): that mismatch is one weak clue; authentication results, DMARC alignment and
  consistent From headers decide.

Reads CPython's own email test messages (`test/test_email/data/msg_*.txt` of the running interpreter's standard
library) in place, plus any --mail of legitimate mail (a directory of message files, a maildir or an mbox file, read
as E4 reads labelled raw mail); prints every message either rule calls spoofed
with the weighed rule's clues, the totals, and the share called spoofed for a Return-Path mismatch alone. Then the
rules baseline (Phishing at suspicion >= PHISHING_THRESHOLD, as `phish-rules` answers) on the embedded corpus and on
synthetic sets: recall, false alarms and sender_spoofing per label, under both rules.

    python bench/bench_e4_legit_mail.py [--mail PATH ...] [--synthetic 1500] [--seed 7]
"""

from __future__ import annotations

import argparse
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sv_env_phishing_detection.baseline import PHISHING_THRESHOLD
from sv_env_phishing_detection.data import decode_message_bytes
from sv_env_phishing_detection.detectors import (
    SenderVerdict,
    analyze,
    auth_verdicts,
    parse_email,
    registrable_domain,
    relayed_by_list,
    suspicion_score,
    weigh_sender,
)
from sv_env_phishing_detection.detectors.domains import address_domain, owned_by_brand
from sv_env_phishing_detection.raw_mail import read_messages
from sv_shared.registry import get_environment

CPYTHON_MAIL = Path(sysconfig.get_paths()["stdlib"]) / "test" / "test_email" / "data"


@dataclass(frozen=True)
class Judged:
    """One message under both rules."""

    name: str
    label: str
    mismatch: bool
    before: bool
    after: bool
    verdict: SenderVerdict
    types: frozenset[str]
    aligned_pass: bool

    def suspicion(self, *, weighed: bool) -> float:
        spoofed = self.after if weighed else self.before
        types = (self.types - {"sender_spoofing"}) | ({"sender_spoofing"} if spoofed else set())
        return suspicion_score(types, aligned_pass=self.aligned_pass)


def judge(name: str, raw: str, label: str) -> Judged:
    analysis = analyze(raw)
    parsed = parse_email(raw)
    verdicts = auth_verdicts(parsed.auth_results)
    from_domain = address_domain(parsed.from_address)
    return_domain = address_domain(parsed.return_path)
    mismatch = bool(
        from_domain and return_domain and registrable_domain(return_domain) != registrable_domain(from_domain)
    )
    before = (mismatch and not analysis.aligned_pass and not relayed_by_list(parsed, verdicts, from_domain)) or bool(
        from_domain and owned_by_brand(from_domain) and "auth_failure" in analysis.types
    )
    return Judged(
        name=name,
        label=label,
        mismatch=mismatch,
        before=before,
        after="sender_spoofing" in analysis.types,
        verdict=weigh_sender(parsed, verdicts, from_domain, vouched=analysis.aligned_pass),
        types=analysis.types,
        aligned_pass=analysis.aligned_pass,
    )


def legitimate_messages(paths: list[Path]) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of CPython's test messages and of every message under the --mail paths."""
    if CPYTHON_MAIL.is_dir():
        for file in sorted(CPYTHON_MAIL.glob("msg_*.txt")):
            yield file.name, file.read_bytes()
    for path in paths:
        for message in read_messages(path):
            yield f"{path.name}: {message.where}", message.data


def why(judged: Judged) -> str:
    clues = ", ".join(f"{clue.name} ({clue.weight}: {clue.detail})" for clue in judged.verdict.clues) or "no clue"
    explained = (
        f"; mismatch explained: {judged.verdict.explained_mismatch}" if judged.verdict.explained_mismatch else ""
    )
    return f"weight {judged.verdict.weight}: {clues}{explained}"


def legitimate_mail(paths: list[Path]) -> None:
    judged = [
        judge(name, decode_message_bytes(data).replace("\r\n", "\n"), "Legitimate")
        for name, data in legitimate_messages(paths)
    ]
    if not judged:
        print(f"no legitimate mail found ({CPYTHON_MAIL} is absent and no --mail was given)")
        return
    print(f"legitimate messages: {len(judged)} (CPython's {CPYTHON_MAIL}, plus --mail)")
    for item in judged:
        if item.before or item.after:
            print(f"  {item.name}: before {_said(item.before)}, after {_said(item.after)}; {why(item)}")
    for rule, flagged in (("before", [j for j in judged if j.before]), ("after", [j for j in judged if j.after])):
        alone = [j for j in flagged if j.mismatch and [c.name for c in j.verdict.clues] == ["return_path_mismatch"]]
        print(
            f"{rule}: {len(flagged)} of {len(judged)} called spoofed ({len(flagged) / len(judged):.1%}); "
            f"for a Return-Path mismatch alone: {len(alone)} ({len(alone) / len(judged):.1%})"
        )
    print(f"Return-Path of another organisation than From's: {sum(j.mismatch for j in judged)} of {len(judged)}")


def _said(spoofed: bool) -> str:
    return "spoofed" if spoofed else "not spoofed"


def shipped_data(synthetic: int, seed: int) -> None:
    data = get_environment("e4").data
    sets = {
        "embedded": data.load_source("embedded"),
        f"synthetic ({synthetic}, seed {seed})": data.synthesize(synthetic, seed=seed),
    }
    print(f"phish-rules on the shipped data (Phishing at suspicion >= {PHISHING_THRESHOLD}):")
    for name, frame in sets.items():
        judged = [judge(row["email_id"], row["raw_email"], row["label"]) for row in frame.iter_rows(named=True)]
        phishing = [j for j in judged if j.label == "Phishing"]
        legitimate = [j for j in judged if j.label == "Legitimate"]
        for rule, weighed in (("before", False), ("after", True)):
            caught = sum(j.suspicion(weighed=weighed) >= PHISHING_THRESHOLD for j in phishing)
            alarms = sum(j.suspicion(weighed=weighed) >= PHISHING_THRESHOLD for j in legitimate)
            spoofed = {
                label: sum((j.after if weighed else j.before) for j in group)
                for label, group in (("Phishing", phishing), ("Legitimate", legitimate))
            }
            print(
                f"  {name}, {rule}: recall {caught}/{len(phishing)}, false alarms {alarms}/{len(legitimate)}, "
                f"sender_spoofing on phishing {spoofed['Phishing']}, on legitimate {spoofed['Legitimate']}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mail", type=Path, action="append", default=[], help="more legitimate mail (dir or mbox)")
    parser.add_argument("--synthetic", type=int, default=1_500, help="synthetic items for the shipped-data figures")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    legitimate_mail(args.mail)
    shipped_data(args.synthetic, args.seed)


if __name__ == "__main__":
    main()

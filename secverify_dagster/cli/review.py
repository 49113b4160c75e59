"""`secverify review`: the human spot-check of a synthetic batch (its queue, one example, accept or reject).

Every command that reads or records decisions also rewrites the batch's review.md, so the report in the batch folder
always shows the decisions recorded so far.
"""

from __future__ import annotations

import argparse
import getpass

from sv_shared.config import outputs_dir
from sv_shared.data.review import ReviewError
from sv_shared.data.review_batches import SyntheticBatch, batches_root, find_batch, list_batches
from sv_shared.data.review_decisions import record_decisions
from sv_shared.data.review_report import show_example, write_review_report
from sv_shared.registry import ENV_IDS, get_environment


def _batch(env_id: str, batch_id: str | None) -> SyntheticBatch:
    root = batches_root(outputs_dir() / "datasets", env_id)
    if batch_id is not None:
        return find_batch(root, batch_id)
    batches = list_batches(root)
    if not batches:
        raise ReviewError(f"no synthetic batch of {env_id} under {root}")
    return batches[-1]


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        raise ReviewError("no OS user name to record: name the reviewer with --reviewer") from None


def cmd_review(args: argparse.Namespace) -> int:
    from secverify_dagster.training.settings import load_sft_dataset_settings

    batch = _batch(args.env, args.batch)
    settings = load_sft_dataset_settings().review
    if args.action == "show":
        print(show_example(get_environment(args.env), batch, args.example))
        return 0
    if args.action in ("accept", "reject"):
        reviewer = args.reviewer or _os_user()
        decided = record_decisions(batch.path, args.examples, args.action, reviewer=reviewer, note=args.note)
        print(f"{batch.batch_id}: {args.action}ed {len(decided)} by {decided[0].reviewer}")
    path, status = write_review_report(batch, max_rejection_rate=settings.max_rejection_rate)
    rate = status.rejection_rate
    print(
        f"{batch.batch_id}: sampled {status.sampled}, reviewed {status.reviewed}, accepted {status.accepted}, "
        f"rejected {status.rejected}, rejection rate {'-' if rate is None else f'{rate:.1%}'} "
        f"(allowed {settings.max_rejection_rate:.1%}): {'PASSED' if status.passed else 'NOT PASSED'} ({status.reason})"
    )
    if args.action == "list" and status.unreviewed_ids:
        print("to review: " + " ".join(status.unreviewed_ids))
    print(f"report: {path}")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `secverify review` to the CLI's sub-commands."""
    review = sub.add_parser("review", help="human spot-check of a synthetic batch: list, show, accept, reject")
    review.add_argument("--env", required=True, choices=ENV_IDS)
    review.add_argument("--batch", help="batch id (default: the environment's latest batch)")
    review.add_argument("--reviewer", help="who decides (default: the OS user name; recorded with the time)")
    actions = review.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="the review queue and the batch's status (rewrites review.md)")
    show = actions.add_parser("show", help="one queued example: prompt, completion, reward, the item's gold")
    show.add_argument("example", help="the kept example's id")
    accept = actions.add_parser("accept", help="accept queued examples")
    accept.add_argument("examples", nargs="+", help="kept example ids")
    accept.add_argument("--note", default="", help="optional remark")
    reject = actions.add_parser("reject", help="reject queued examples")
    reject.add_argument("examples", nargs="+", help="kept example ids")
    reject.add_argument("--note", required=True, help="what is wrong with them")
    review.set_defaults(func=cmd_review)

"""The chain behind a report: each number it publishes against the summary of the run it came from (and that run's
chain), its files, and the Dagster run that materialized it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from secverify_dagster.assets.keys import report_key
from secverify_dagster.audit.links import Link, mismatched, missing, present
from secverify_dagster.audit.subjects import Subjects, read_json, run_entries
from sv_shared.data.hashing import stable_json
from sv_shared.runs.folder import RunFolder
from sv_shared.runs.schema import RunRecordError


class ReportChains(Subjects):
    """The report chains of an Auditor (each run's chain comes from RunChains)."""

    def report_chain(self, report_json: Path) -> Link:
        name = self._report_name(report_json)
        data = read_json(report_json)
        if not data:
            return missing("report", name, f"{report_json} cannot be read as a JSON object")
        env_id = data.get("env")
        facts = {"path": str(report_json.parent), "env": env_id}
        links: list[Link] = []
        markdown = report_json.parent / "report.md"
        if not markdown.is_file():
            links.append(missing("report file", str(markdown), "report.md is gone"))
        metrics = data.get("metrics") if isinstance(data.get("metrics"), Mapping) else {}
        dataset = data.get("dataset") if isinstance(data.get("dataset"), Mapping) else {}
        entries = list(run_entries(data.get("runs")))
        links += [self._published(label, Path(run_dir), metrics.get(label), dataset) for label, run_dir in entries]
        links.append(self._report_dagster(report_json, env_id))
        note = "" if entries else "it names no eval runs: it publishes no numbers"
        return present("report", name, note=note, facts=facts, links=tuple(links))

    def _published(self, label: str, run_dir: Path, numbers: Any, dataset: Mapping[str, Any]) -> Link:
        """A model's numbers in a report, against the summary.json of the run they came from."""
        chain = self.run_chain(run_dir)
        facts = {"run_dir": str(run_dir)}
        try:
            summary = RunFolder(run_dir).read_summary()
            metadata = RunFolder(run_dir).read_metadata()
        except (FileNotFoundError, RunRecordError) as error:
            return missing("published numbers", label, f"the run cannot be read: {error}", facts=facts, links=(chain,))
        if isinstance(numbers, Mapping) and stable_json(numbers) != stable_json(summary.metrics):
            why = "the report's numbers differ from the run's summary.json"
            return mismatched("published numbers", label, why, facts=facts, links=(chain,))
        if dataset.get("hash") not in (None, metadata.dataset.hash):
            recorded = str(dataset.get("hash"))[:12]
            why = f"the report names dataset {recorded}…, the run drew from {metadata.dataset.hash[:12]}…"
            return mismatched("published numbers", label, why, facts=facts, links=(chain,))
        note = "" if isinstance(numbers, Mapping) else "the report holds no numbers of its own for this run to compare"
        return present("published numbers", label, note=note, facts=facts, links=(chain,))

    def _report_dagster(self, report_json: Path, env_id: Any) -> Link:
        """The materialization whose metadata names this report's folder or one of its files."""
        names = {str(report_json), str(report_json.parent), str(report_json.parent / "report.md")}
        keys = [report_key(env_id)] if isinstance(env_id, str) else []
        keys += [key for key in self.events.asset_keys() if key not in keys and any("report" in p for p in key.path)]
        for key in keys:
            link = self.events.materialization(
                self._report_name(report_json), key, lambda meta: any(str(value) in names for value in meta.values())
            )
            if link is not None:
                return link
        return self.events.not_found(self._report_name(report_json), "materialization of a report asset")

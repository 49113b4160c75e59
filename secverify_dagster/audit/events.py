"""The Dagster side of an audit: which Dagster run materialized (or checked) an artifact, from the event log.

Materializations carry the artifact's identity in their metadata (an eval's run_id, a dataset's hash, a checkpoint's
model_id, a report's path), so an artifact is matched to the run that made it by that metadata, not by time. Each
asset key's records are fetched once per audit and kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg

from secverify_dagster.audit.links import Link, missing, present

PAGE = 1000
"""Records fetched per event-log query (a key's history is read page by page)."""

MetadataMatch = Callable[[Mapping[str, Any]], bool]

INPUT_POINTER = "dagster/input_event_pointer/"
"""Tag prefix Dagster gives a materialization for each upstream asset: the storage id of the materialization read."""


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def _values(metadata: Mapping[str, dg.MetadataValue]) -> dict[str, Any]:
    return {name: getattr(value, "value", value) for name, value in metadata.items()}


def open_instance(home: Path) -> dg.DagsterInstance | None:
    """The Dagster instance configured in `home` ($DAGSTER_HOME), or None where there is none (nothing is created)."""
    if not (home / "dagster.yaml").is_file():
        return None
    return dg.DagsterInstance.from_config(str(home))


class DagsterRecords:
    """Materializations and check evaluations of one Dagster instance, matched to artifacts by their metadata."""

    def __init__(self, instance: dg.DagsterInstance | None, *, unavailable: str = "") -> None:
        """unavailable: why there is no instance (shown in every Dagster link when instance is None)."""
        self.instance = instance
        self.unavailable = unavailable or "no Dagster instance to read"
        self._materializations: dict[dg.AssetKey, list[dg.EventLogRecord]] = {}
        self._runs: dict[str, dg.DagsterRun | None] = {}
        self._keys: list[dg.AssetKey] | None = None

    def asset_keys(self) -> list[dg.AssetKey]:
        if self._keys is None:
            self._keys = list(self.instance.get_asset_keys()) if self.instance is not None else []
        return self._keys

    def _records(self, key: dg.AssetKey) -> list[dg.EventLogRecord]:
        if key not in self._materializations:
            records: list[dg.EventLogRecord] = []
            cursor = None
            while self.instance is not None:
                page = self.instance.fetch_materializations(key, limit=PAGE, cursor=cursor)
                records.extend(page.records)
                if not page.has_more:
                    break
                cursor = page.cursor
            self._materializations[key] = records
        return self._materializations[key]

    def _run(self, run_id: str) -> dg.DagsterRun | None:
        if run_id not in self._runs:
            self._runs[run_id] = self.instance.get_run_by_id(run_id) if self.instance is not None else None
        return self._runs[run_id]

    def materialization(
        self, what: str, key: dg.AssetKey, match: MetadataMatch, *, partition: str | None = None, first: bool = False
    ) -> Link | None:
        """The Dagster run that materialized the artifact `match` recognises, as a link; None when no materialization
        of `key` matches. Newest first, or (first=True) the earliest: for an artifact a later materialization may
        only have resumed (an eval run is resumed, not redone), the one that made it. The link lists the exact
        upstream materializations that run read (Dagster's input event pointers)."""
        records = self._records(key)
        for record in reversed(records) if first else records:
            event = record.asset_materialization
            if event is None or (partition is not None and event.partition != partition):
                continue
            if match(_values(event.metadata)):
                link = self._link(what, record.run_id, record.timestamp, key.to_user_string(), event.partition)
                read = self.inputs_read(event.tags or {})
                return replace(link, facts={**link.facts, "read": read}) if read else link
        return None

    def inputs_read(self, tags: Mapping[str, str]) -> dict[str, dict[str, Any]]:
        """Upstream asset → the materialization a run read from it (storage id, Dagster run, time), from the
        `dagster/input_event_pointer/<asset>` tags Dagster writes on every materialization."""
        read: dict[str, dict[str, Any]] = {}
        for name, value in sorted(tags.items()):
            if not name.startswith(INPUT_POINTER) or not value.isdigit():
                continue
            asset = name.removeprefix(INPUT_POINTER)
            record = self._by_storage_id(dg.AssetKey.from_user_string(asset), int(value))
            read[asset] = (
                {"storage_id": int(value), "run_id": record.run_id, "at": _iso(record.timestamp)}
                if record is not None
                else {"storage_id": int(value), "run_id": None, "at": None}
            )
        return read

    def _by_storage_id(self, key: dg.AssetKey, storage_id: int) -> dg.EventLogRecord | None:
        return next((record for record in self._records(key) if record.storage_id == storage_id), None)

    def check_evaluation(self, what: str, check_key: dg.AssetCheckKey, match: MetadataMatch) -> Link | None:
        """The Dagster run whose evaluation of `check_key` `match` recognises (newest first), as a link."""
        if self.instance is None:
            return None
        cursor = None
        while True:
            records = self.instance.event_log_storage.get_asset_check_execution_history(
                check_key, limit=PAGE, cursor=cursor
            )
            for record in records:
                # A planned evaluation (its step never ran) has no metadata.
                metadata = getattr(record.evaluation, "metadata", None)
                if metadata is not None and match(_values(metadata)):
                    where = f"{check_key.asset_key.to_user_string()}:{check_key.name}"
                    return self._link(what, record.run_id, record.create_timestamp, where, record.partition)
            if len(records) < PAGE:
                return None
            cursor = records[-1].id

    def not_found(self, what: str, searched: str) -> Link:
        """The missing link when no record matches: outside Dagster, in another instance, or no instance at all."""
        if self.instance is None:
            return missing("dagster run", what, self.unavailable)
        return missing(
            "dagster run",
            what,
            f"no {searched} in the Dagster event log records it: made outside Dagster (a CLI command) or in "
            "another Dagster instance",
        )

    def _link(self, what: str, run_id: str, timestamp: float, asset: str, partition: str | None) -> Link:
        run = self._run(run_id)
        facts: dict[str, Any] = {
            "run_id": run_id,
            "job": run.job_name if run else None,
            "asset": asset,
            "at": _iso(timestamp),
        }
        if partition is not None:
            facts["partition"] = partition
        if run is not None:
            facts["status"] = run.status.value
            facts["tags"] = {name: value for name, value in run.tags.items() if not name.startswith(".dagster")}
        else:
            facts["status"] = "the run's record is gone (the event remains)"
        return present("dagster run", what, facts=facts)

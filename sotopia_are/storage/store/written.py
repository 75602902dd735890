"""One-round-trip steps of an episode, from what this store last wrote of it.

A running batch takes each episode through start, finish and a verdict. Done the general
way (WATCH, read the hash back, validate it, check the index keys' types, rewrite the hash
whole with every index entry: four round trips and the whole record validated and dumped
again) that costs more CPU than the rest of the episode's writes together. So the store
remembers the hash it last wrote of each episode (:class:`WrittenEpisodes`: the
``EpisodeLog`` and the exact text of every field), and the next step is one Lua script
(:data:`STEP_SCRIPT`) that, atomically:

1. checks that the stored hash is still the remembered one: the same field names, and the
   same texts (compared whole: the client sends them) for every field but those another writer
   may change meanwhile — ``event_count`` and ``updated_at`` while the episode runs (its
   appends), ``updated_at`` after (the calls stream's) — which are checked for a form the
   record reads back unchanged; a start checks that there is no hash;
2. checks that every index key it writes holds the type the store gives it (or nothing);
3. only then writes the changed fields, the index moves, the listed summary and the calls.

Any other hash (another process wrote it, an older layout, a field the store did not
write, a key of another type) and the script writes nothing and answers so: the caller
then takes the step the general way, which reads what is there and gives the same result,
or the same error, as before. What either way leaves in Redis is the same, field for field
(the general way rewrites the hash whole; a field read back and dumped again gives the
same text, which is what lets the script keep the fields it does not change).
"""

from __future__ import annotations

import hashlib
import struct
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sotopia_are.record import Verdict
from sotopia_are.social import EpisodeStatus
from sotopia_are.storage.episode_log import EpisodeLog
from sotopia_are.storage.exported import ExportHead, exported_parts, utf8
from sotopia_are.storage.keys import (
    EPISODES_BY_TIME,
    EXPORTED_FIELD,
    SUMMARY_FIELD,
    episode_calls_key,
    episode_events_key,
)
from sotopia_are.storage.store.entries import entry_args
from sotopia_are.storage.store.index import index_entries, listing_text

__all__ = [
    "STEP_SCRIPT",
    "STEP_SHA",
    "Step",
    "Written",
    "WrittenEpisodes",
    "changed_log",
    "hash_fields",
    "hash_text",
]

# KEYS: the hash, the by-time index, the calls stream, the events stream, then the index
# sets the episode leaves (n_rem of them) and those it joins.
# ARGV: pk, the checked texts ('' = there must be no hash; else ``Written.packed``: '=',
# each text's length as 4 bytes big-endian, then the texts), the checked names in one
# argument, joined by newlines (no field name of the store holds one, and a name that did would
# only fail the checks; each argument costs redis-py and hiredis some 3,000 instructions
# and a step checks about 35 names), the volatile fields (count, then name and 'int' or
# 'float' each), n_rem, the created-at score, the fields to set (count, name value...),
# the fields to delete (count, names), the number of events to append (a running
# episode's queued events, appended to the events stream and counted in its event count,
# as the appends script would: the checks above make them appends it takes), then each
# event and then each call to append as ``entries.entry_args`` sends it: how many texts
# its entry has and those texts (field, value...), or '=' and its payload alone (the
# previous entry's fields, the payload first).
# Replies {1, event_count} once written, {0} when nothing was (the hash is not the one
# remembered, or a key holds another type).
STEP_SCRIPT = """
-- Globals read once into locals: each read of a global is a table lookup by name, and
-- the loops below read them per argument.
local KEYS, ARGV, unpack, tonumber = KEYS, ARGV, unpack, tonumber
local redis_call, redis_pcall = redis.call, redis.pcall
local key, pk, expected = KEYS[1], ARGV[1], ARGV[2]
local names = {}
for name in string.gmatch(ARGV[3], '[^\\n]+') do names[#names + 1] = name end
local checked = #names
-- (Arguments are read from ARGV by their place, runs of them by unpack: a Lua function
-- called for each of a step's 40 to 80 arguments cost the server some 6 % of a start.)
local forms = {}
local at = 5
for i = 1, tonumber(ARGV[4]) do
  names[checked + i] = ARGV[at]
  forms[i] = ARGV[at + 1]
  at = at + 2
end
local values
if expected == '' then
  if redis_call('EXISTS', key) ~= 0 then return {0} end
else
  -- A key of another type answers HLEN with an error, a table here: not the count.
  if redis_pcall('HLEN', key) ~= #names then return {0} end
  values = redis_call('HMGET', key, unpack(names))
  local lengths = {}
  for i = 1, checked do
    local v = values[i]
    if not v then return {0} end
    lengths[i] = #v
  end
  -- The texts themselves, not a SHA-1 of them (20,000 to 40,000 instructions a step):
  -- Lua interns its strings, so the one joined here is the argument's own when equal.
  local packed = struct.pack('>' .. string.rep('I4', checked), unpack(lengths))
  if '=' .. packed .. table.concat(values, '', 1, checked) ~= expected then return {0} end
  for i = 1, #forms do
    local v = values[checked + i]
    if not v then return {0} end
    if forms[i] == 'int' then
      if not (v == '0' or (#v < 16 and string.match(v, '^[1-9]%d*$'))) then return {0} end
    elseif not (string.match(v, '^%-?%d+%.?%d*$')
        or string.match(v, '^%-?%d+%.?%d*e[%+%-]%d+$')) then
      return {0}
    end
  end
end
-- Whether a key holds the type whose count command this is, or nothing: the count is a
-- number then, and WRONGTYPE's error otherwise (any other error is the script's, as
-- redis.call makes it). (TYPE answers a status, a table made and read per key.)
local function holds(count, k)
  local n = redis_pcall(count, k)
  if type(n) == 'number' then return true end
  if string.find(n['err'], 'WRONGTYPE', 1, true) then return false end
  error(n['err'], 0)
end
if not holds('ZCARD', KEYS[2]) then return {0} end
for i = 5, #KEYS do
  if not holds('SCARD', KEYS[i]) then return {0} end
end
local n_rem, created = tonumber(ARGV[at]), ARGV[at + 1]
local n_sets = 2 * tonumber(ARGV[at + 2])
local sets = {unpack(ARGV, at + 3, at + 2 + n_sets)}
at = at + 3 + n_sets
local n_deletes = tonumber(ARGV[at])
local deletes_at = at + 1
at = deletes_at + n_deletes
local events = tonumber(ARGV[at])
at = at + 1
local events_at = at
for _ = 1, events do
  local count = ARGV[at]
  if count == '=' then at = at + 2 else at = at + 1 + tonumber(count) end
end
if events > 0 then
  -- The running episode's own queued events, appended as the appends script would (its
  -- status and count were checked above: running, and a count of the form 'int'), their
  -- count added to the event count the check read.
  local count = false
  for i = checked + 1, #names do
    if names[i] == 'event_count' then count = values[i] end
  end
  if not count then return {0} end
  if not holds('XLEN', KEYS[4]) then return {0} end
  sets[n_sets + 1] = 'event_count'
  sets[n_sets + 2] = string.format('%d', tonumber(count) + events)
end
if at <= #ARGV and not holds('XLEN', KEYS[3]) then return {0} end
-- HSET first: a server at its memory limit refuses a script's first write that may grow
-- the data, and lets through every later one (a DEL first would let it all through).
redis_call('HSET', key, unpack(sets))
if expected == '' then redis_call('DEL', KEYS[3], KEYS[4]) end
if n_deletes > 0 then
  redis_call('HDEL', key, unpack(ARGV, deletes_at, deletes_at + n_deletes - 1))
end
for i = 5, 4 + n_rem do redis_call('SREM', KEYS[i], pk) end
for i = 5 + n_rem, #KEYS do redis_call('SADD', KEYS[i], pk) end
redis_call('ZADD', KEYS[2], created, pk)
-- Entries: a count and that many texts, or '=' and the payload alone (the previous
-- entry's other texts).
local function append(stream, from, last)
  local entry = {}
  while from <= last do
    local count = ARGV[from]
    if count == '=' then
      entry[2] = ARGV[from + 1]
      from = from + 2
    else
      local texts = tonumber(count)
      entry = {unpack(ARGV, from + 1, from + texts)}
      from = from + 1 + texts
    end
    redis_call('XADD', stream, '*', unpack(entry))
  end
end
append(KEYS[4], events_at, at - 1)
append(KEYS[3], at, #ARGV)
return {1, redis_call('HGET', key, 'event_count')}
"""
STEP_SHA = hashlib.sha1(STEP_SCRIPT.encode()).hexdigest()


def hash_text(value: Any) -> str:
    """A hash field's value as redis-py sends it: text as is, numbers as their ``repr``."""
    return value if isinstance(value, str) else repr(value)


def hash_fields(log: EpisodeLog, names: Collection[str] | None = None) -> dict[str, str]:
    """``log``'s hash fields (of ``names`` only, when given) as the texts Redis holds:
    ``to_hash`` (``None`` fields left out), each value as redis-py sends it."""
    dumped: dict[str, Any] = log.model_dump(
        mode="json", exclude_none=True, include=None if names is None else set(names)
    )
    return {name: hash_text(value) for name, value in dumped.items()}


@dataclass(frozen=True)
class Written:
    """An episode's hash as this store last wrote it: ``log``, and ``fields`` the exact
    texts of its fields (the listed summary included; a text as its UTF-8 bytes where it
    was made so). The texts of :meth:`volatile`
    fields may since have changed in Redis. ``head`` is the head of its export line (of
    a finished episode), for the next step's line to take when its fields are the same."""

    log: EpisodeLog
    fields: Mapping[str, str | bytes]
    head: ExportHead | None = None

    def volatile(self) -> dict[str, str]:
        """The fields others may change while the episode is in this state, and the form
        (``int`` or ``float``) each must keep: a running episode's appends count its
        events; an append to the calls stream moves ``updated_at``."""
        if self.log.status is EpisodeStatus.RUNNING:
            return {"event_count": "int", "updated_at": "float"}
        return {"updated_at": "float"}

    def packed(self, names: Sequence[str]) -> bytes:
        """What :data:`STEP_SCRIPT` compares with the stored texts of ``names``: ``=``,
        the UTF-8 length of each of their texts as 4 bytes (big-endian), then those
        texts' UTF-8 bytes, in that order (the lengths tell where each text ends)."""
        texts = [utf8(self.fields[name]) for name in names]
        return b"=" + struct.pack(f">{len(texts)}I", *map(len, texts)) + b"".join(texts)


class WrittenEpisodes:
    """What this store last wrote of the episodes it takes from step to step, the
    ``capacity`` most recently written (0: none; every step then goes the general way)."""

    def __init__(self, capacity: int = 2048) -> None:
        self.capacity = capacity
        self._written: OrderedDict[str, Written] = OrderedDict()

    def get(self, key: str) -> Written | None:
        """What this store last wrote at ``key`` (None: nothing remembered)."""
        return self._written.get(key)

    def remember(self, key: str, written: Written) -> None:
        """Remember ``written`` as the hash at ``key``, forgetting the oldest beyond
        ``capacity``."""
        if not self.capacity:
            return
        self._written[key] = written
        self._written.move_to_end(key)
        while len(self._written) > self.capacity:
            self._written.popitem(last=False)

    def forget(self, keys: Iterable[str]) -> None:
        """Forget ``keys`` (written another way, or deleted)."""
        for key in keys:
            self._written.pop(key, None)


@dataclass(frozen=True)
class Step:
    """One step of an episode as :data:`STEP_SCRIPT`'s keys and arguments: ``old`` (None:
    a start, where there must be no hash) to ``new``, whose ``changed`` fields are
    written (those it has as ``None`` deleted), with the index moves and ``calls``
    (calls-stream entries) appended. ``fields`` are ``new``'s hash texts but for the
    volatile ones of ``old`` it did not change (those are Redis's)."""

    keys: list[str]
    args: list[str | bytes]
    fields: dict[str, str | bytes]
    head: ExportHead | None = None

    @classmethod
    def of(
        cls,
        old: Written | None,
        new: EpisodeLog,
        changed: Collection[str] = (),
        calls: Sequence[Mapping[str, str | bytes]] = (),
        texts: Mapping[str, str | bytes] | None = None,
        verdicts: Sequence[Verdict] | None = None,
        events: Sequence[Mapping[str, str | bytes]] = (),
    ) -> Step:
        """The step from ``old`` to ``new`` (``changed`` is not read for a start);
        ``texts`` are changed fields' texts already made (as :func:`hash_fields` would,
        or their UTF-8 bytes: sent and compared as they are, not encoded again);
        ``verdicts`` the validated verdicts ``new.verdicts`` was just dumped from (see
        :func:`~sotopia_are.storage.exported.exported_parts`); ``events`` are
        events-stream entries to append, counted in the event count (``old`` a running
        episode's: its queued events, whose round trip this step is)."""
        fields: dict[str, str | bytes]
        if old is None:
            fields = dict(hash_fields(new))
            sets = dict(fields)
            deletes: list[str] = []
            checked: list[str] = []
            volatile: dict[str, str] = {}
            expected = b""
        else:
            fields = dict(old.fields)
            volatile = old.volatile()
            made = dict(texts or {})
            dumped = {**hash_fields(new, [n for n in changed if n not in made]), **made}
            sets = {}
            deletes = []
            for name in changed:
                if name in dumped:
                    if name in volatile or fields.get(name) != dumped[name]:
                        sets[name] = dumped[name]
                    fields[name] = dumped[name]
                elif fields.pop(name, None) is not None:
                    deletes.append(name)
            checked = [name for name in old.fields if name not in volatile]
            expected = old.packed(checked)
        exported, head = exported_parts(
            new, fields, old.head if old is not None else None, verdicts
        )
        if exported is None:
            if fields.pop(EXPORTED_FIELD, None) is not None:
                deletes.append(EXPORTED_FIELD)
        elif fields.get(EXPORTED_FIELD) != exported:
            sets[EXPORTED_FIELD] = fields[EXPORTED_FIELD] = exported
        listing = listing_text(new)
        if listing is None:
            if fields.pop(SUMMARY_FIELD, None) is not None:
                deletes.append(SUMMARY_FIELD)
        elif fields.get(SUMMARY_FIELD) != listing or old is None:
            sets[SUMMARY_FIELD] = fields[SUMMARY_FIELD] = listing
        before = index_entries(old.log) if old is not None else set()
        after = index_entries(new)
        leaves, joins = sorted(before - after), sorted(after - before)
        key = new.redis_key(new.pk)
        args: list[str | bytes] = [new.pk, expected, "\n".join(checked), str(len(volatile))]
        for name, form in volatile.items():
            args += [name, form]
        args += [str(len(leaves)), hash_text(new.created_at), str(len(sets))]
        for name, value in sets.items():
            args += [name, value]
        args += [str(len(deletes)), *deletes, str(len(events))]
        previous = None
        for event in events:
            args += entry_args(event, previous)
            previous = event
        previous = None
        for call in calls:
            args += entry_args(call, previous)
            previous = call
        streams = [episode_calls_key(new.pk), episode_events_key(new.pk)]
        return cls([key, EPISODES_BY_TIME, *streams, *leaves, *joins], args, fields, head)

    def written(self, new: EpisodeLog, event_count: str) -> tuple[EpisodeLog, Written]:
        """``new`` as stored, given the ``event_count`` text the script answered, and what
        to remember of it."""
        fields = {**self.fields, "event_count": event_count}
        stored: EpisodeLog = new.model_copy(update={"event_count": int(event_count)})
        return stored, Written(stored, fields, self.head)


def changed_log(
    log: EpisodeLog, checked: Mapping[str, Any], built: Mapping[str, Any] | None = None
) -> EpisodeLog:
    """``log`` with ``checked`` fields validated as ``replace`` validates them, and
    ``built`` ones (values the store itself just made valid: JSON dumped from validated
    models, constants) taken as they are, not copied."""
    new: EpisodeLog = log.model_copy(update=dict(built or {}))
    validator = type(log).__pydantic_validator__
    for name, value in checked.items():
        validator.validate_assignment(new, name, value)  # in place
    return new

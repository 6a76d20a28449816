"""The entity graph in memory, and its ranking: pure, no storage.

A `Graph` holds one agent's links (which message names which entity), how many messages name each
entity, and who the speakers are. It resolves a query's entities to the keys they may be stored
under (aliases: "Smith" -> "John Smith" when only one name fits; case and plural variants; the
user's first person "I", "my sister" meeting the user's name) and ranks messages: those naming the
query's entities, then those one and two hops away through entities named with them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from agentos.retrieval.entities import AGENT, USER, alias_words, ngram_keys, query_mentions

QUERY_HUB_SHARE = 0.2  # an entity named by more than this share of messages does not pick messages by itself
EXPAND_SHARE = 0.05  # expansion goes only through entities named by at most this share of messages
HUB_MIN_MESSAGES = 20  # (neither rule applies to an entity named by fewer messages than this)
EXPAND_MAX_MESSAGES = 500  # nor does expansion go through one named by more messages than this
SEEDS = 20  # the best messages of one level whose other entities are followed to the next
HOP_ENTITIES = (10, 5)  # entities followed at the first and second hop
HOP_MESSAGES = (20, 10)  # messages each hop adds at most
HOP_DECAY = 0.5  # a message found through a hop counts this much of the entities that led to it

Group = frozenset[str]  # the keys one query entity may be stored under


@dataclass
class Graph:
    """One agent's entities and links: messages by entity, entities by message (both as numbers)."""

    keys: dict[str, int] = field(default_factory=dict)  # entity key -> its number
    key_list: list[str] = field(default_factory=list)  # entity number -> its key
    names: list[str] = field(default_factory=list)  # by entity number: the first name it was given
    kinds: list[str] = field(default_factory=list)
    by_entity: list[list[int]] = field(default_factory=list)  # entity number -> the messages naming it, in order
    ids: list[str] = field(default_factory=list)  # message number -> message id
    times: list[float] = field(default_factory=list)  # message number -> its time (seconds)
    by_message: list[tuple[int, ...]] = field(default_factory=list)  # message number -> the entities it names
    speakers: dict[str, set[str]] = field(default_factory=lambda: {"user": set(), "assistant": set()})
    certain: set[str] = field(default_factory=set)  # keys seen at least once where a capital surely meant a name
    by_word: dict[str, set[str]] = field(default_factory=dict)  # a word -> the multi-word names it starts or ends

    @property
    def messages(self) -> int:
        return len(self.ids)

    @classmethod
    def from_links(cls, data: pa.Table) -> Graph:
        """The graph of a links table (entity_key, message_id, created_at, role, name, kind, certain), built in
        Arrow and numpy: at 100k messages a Python loop over the rows took 2 s."""
        graph = cls()
        if not data.num_rows:
            return graph
        keys = pc.dictionary_encode(data.column("entity_key")).combine_chunks()
        messages = pc.dictionary_encode(data.column("message_id")).combine_chunks()
        k = keys.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        m = messages.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        key_list = keys.dictionary.to_pylist()
        graph.ids = messages.dictionary.to_pylist()
        micros = pc.cast(data.column("created_at"), pa.int64()).to_numpy()
        times = np.zeros(len(graph.ids))
        times[m] = micros / 1e6
        graph.times = times.tolist()
        first = np.unique(k, return_index=True)[1]
        names, kinds = data.column("name").take(first).to_pylist(), data.column("kind").take(first).to_pylist()
        for key, name, kind in zip(key_list, names, kinds):
            graph._entity(key, name, kind)
        graph.by_entity = _groups(m[np.lexsort((m, k))], k, len(key_list), list)
        graph.by_message = _groups(k[np.argsort(m, kind="stable")], m, len(graph.ids), tuple)
        certain = data.column("certain").to_numpy(zero_copy_only=False).astype(bool)
        graph.certain = {key_list[i] for i in np.unique(k[certain])}
        speaking = pc.equal(data.column("kind"), "speaker").to_numpy(zero_copy_only=False).astype(bool)
        roles = data.column("role").to_numpy(zero_copy_only=False)
        for i, role in set(zip(k[speaking].tolist(), roles[speaking].tolist())):
            if role in graph.speakers:
                graph.speakers[role].add(key_list[i])
        return graph

    def add_message(self, message_id: str, time: float, rows: Sequence[dict[str, Any]]) -> None:
        """One message's link rows (entity_key, name, kind, role, certain); a message with none is not kept."""
        if not rows:
            return
        number = len(self.ids)
        self.ids.append(message_id)
        self.times.append(time)
        entities = []
        for r in rows:
            entity = self._entity(r["entity_key"], r["name"], r["kind"])
            self.by_entity[entity].append(number)
            entities.append(entity)
            if r.get("certain", True):
                self.certain.add(r["entity_key"])
            if r["kind"] == "speaker" and r["role"] in self.speakers:
                self.speakers[r["role"]].add(r["entity_key"])
        self.by_message.append(tuple(dict.fromkeys(entities)))

    def _entity(self, key: str, name: str, kind: str) -> int:
        number = self.keys.get(key)
        if number is None:
            number = self.keys[key] = len(self.names)
            self.key_list.append(key)
            self.names.append(name)
            self.kinds.append(kind)
            self.by_entity.append([])
            for word in alias_words(key):
                self.by_word.setdefault(word, set()).add(key)
        return number

    def df(self, key: str) -> int:
        """How many messages name `key`."""
        number = self.keys.get(key)
        return 0 if number is None else len(self.by_entity[number])

    def idf(self, keys: Iterable[str]) -> float:
        n = sum(self.df(k) for k in keys)
        return math.log(1.0 + (self.messages + 1) / (n + 0.5))

    def is_hub(self, keys: Iterable[str]) -> bool:
        n = sum(self.df(k) for k in keys)
        return n >= HUB_MIN_MESSAGES and n > QUERY_HUB_SHARE * self.messages

    def is_speaker(self, key: str) -> bool:
        return key in (USER, AGENT) or key in self.speakers["user"] or key in self.speakers["assistant"]

    def weak(self, group: Group) -> bool:
        """Whether a query entity is too broad to pick messages by itself: named nearly everywhere, or a speaker
        (whom every "I" names)."""
        return self.is_hub(group) or all(self.is_speaker(k) for k in group)

    def expandable(self, key: str) -> bool:
        """Whether expansion may go through `key`: surely a name, not a speaker, and not named nearly everywhere."""
        if key not in self.certain or self.is_speaker(key):
            return False
        n = self.df(key)
        return n <= EXPAND_MAX_MESSAGES and (n < HUB_MIN_MESSAGES or n <= EXPAND_SHARE * self.messages)

    def people(self, key: str) -> set[str]:
        """The keys one person may be stored under: the user is "user" and each name the user's messages carry
        (the same for the assistant, "agent")."""
        for role, plain in (("user", USER), ("assistant", AGENT)):
            named = self.speakers[role]
            if key == plain:
                return {plain, *named}
            if key in named:
                return {key, plain}
        return {key}

    def resolve(self, key: str) -> Group:
        """The known keys `key` may be stored under (empty when none is known)."""
        if ":" in key:
            owner, relation = key.split(":", 1)
            found = {f"{o}:{relation}" for o in self.people(owner) | self.resolve(owner)}
        else:
            found = self.people(key)
            if " " not in key:
                longer = self.by_word.get(key, set())
                if len(longer) == 1:
                    found |= longer
            for word in alias_words(key):
                if self.by_word.get(word) == {key}:
                    found.add(word)
        return frozenset(k for k in found if k in self.keys)

    def groups(self, query: str, speaker: str | None = None) -> list[Group]:
        """The query's entities, each as the keys it may be stored under; overlapping ones merged."""
        keys = [m.key for m in query_mentions(query, speaker)]
        keys += [k for k in ngram_keys(query) if k in self.certain]  # names in any case: only sure ones
        merged: list[set[str]] = []
        for key in dict.fromkeys(keys):
            group = set(self.resolve(key))
            if not group:
                continue
            for other in [g for g in merged if g & group]:
                group |= other
                merged.remove(other)
            merged.append(group)
        return [frozenset(g) for g in merged]

    # -- ranking (message numbers) ---------------------------------------------------------------

    def direct(self, groups: Sequence[Group]) -> list[int]:
        """Messages naming the query's entities: more of them first, then rarer ones, then newer. A message naming
        only broad entities (a speaker, one named nearly everywhere) is left out; so is every message when all the
        query's entities are broad."""
        weak = [self.weak(g) for g in groups]
        if all(weak):
            return []
        idf = [self.idf(g) for g in groups]
        matched: dict[int, set[int]] = {}
        for i, group in enumerate(groups):
            if not weak[i]:
                for key in group:
                    for m in self.by_entity[self.keys[key]]:
                        matched.setdefault(m, set()).add(i)
        broad = {self.keys[k]: i for i, g in enumerate(groups) if weak[i] for k in g}
        if broad:
            for m, found in matched.items():
                found.update(broad[e] for e in self.by_message[m] if e in broad)
        return sorted(matched, key=lambda m: (-len(matched[m]), -sum(idf[g] for g in matched[m]), -self.times[m]))

    def co_occurring(self, seeds: Sequence[int], exclude: set[str], cap: int) -> dict[str, float]:
        """The entities the seed messages also name (not `exclude`, not speakers or hubs), weighted by how many seeds
        name them, the better seeds counting more, and by rarity; the `cap` strongest."""
        weight: dict[str, float] = {}
        for rank, m in enumerate(seeds):
            for e in self.by_message[m]:
                key = self.key_list[e]
                if key not in exclude and self.expandable(key):
                    weight[key] = weight.get(key, 0.0) + 1.0 / (1.0 + rank)
        scored = {k: w * self.idf([k]) for k, w in weight.items()}
        return {k: scored[k] for k in sorted(scored, key=lambda k: (-scored[k], k))[:cap]}

    def hop(self, entities: dict[str, float], seen: set[int], cap: int, decay: float = HOP_DECAY) -> list[int]:
        """Messages not yet `seen` that name the hop's entities, by the (decayed) weight of those they name, then
        newer; the `cap` best."""
        score: dict[int, float] = {}
        for key, weight in entities.items():
            for m in self.by_entity[self.keys[key]]:
                if m not in seen:
                    score[m] = score.get(m, 0.0) + decay * weight
        return sorted(score, key=lambda m: (-score[m], -self.times[m]))[:cap]

    def ranked(self, query: str, limit: int, *, speaker: str | None = None, hops: int = 2) -> list[str]:
        """Message ids for a query, best first: direct matches, then each hop's (see the module's docstring)."""
        groups = self.groups(query, speaker)
        direct = self.direct(groups) if groups else []
        if not direct or limit <= 0:
            return []
        seen, used = set(direct), {k for g in groups for k in g}
        seeds, levels = direct[:SEEDS], []
        for level in range(min(hops, len(HOP_ENTITIES))):
            entities = self.co_occurring(seeds, used, HOP_ENTITIES[level])
            if not entities:
                break
            used |= set(entities)
            found = self.hop(entities, seen, HOP_MESSAGES[level])
            if not found:
                break
            seen |= set(found)
            levels.append(found)
            seeds = found[:SEEDS]
        return [self.ids[m] for m in combine(direct, levels, limit)]


def _groups(values: np.ndarray, by: np.ndarray, count: int, kind: Any) -> list[Any]:
    """`values` (sorted by `by`) cut into one list or tuple per number 0..count-1 of `by`."""
    flat = values.tolist()
    ends = np.cumsum(np.bincount(by, minlength=count)).tolist()
    return [kind(flat[start:end]) for start, end in zip([0, *ends[:-1]], ends)]


def combine(direct: list[int], hops: list[list[int]], limit: int) -> list[int]:
    """The direct matches first, then each hop's; the hops keep up to half of `limit`."""
    extra = [m for hop in hops for m in hop]
    reserve = min(len(extra), limit // 2)
    return (direct[: max(limit - reserve, 0)] + extra)[:limit]

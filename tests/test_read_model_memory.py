"""The read model's memory (usergroups.read_model.memory), alone: what a change forgets,
which fills a change heard during their read drops, and the bounds in entries and bytes."""

from usergroups.read_model import changes
from usergroups.read_model.memory import FORGOTTEN_KEPT, MISSING, Memory, weigh

ALICE = changes.person(1, "alice")
BOB = changes.person(1, "bob")
WORKSPACE = changes.workspace(1)


def filled(memory: Memory, key: str, *depends_on: object, weight: int = 10) -> bool:
    return memory.put(key, key.upper(), depends_on, memory.mark(), weight)


def test_a_change_forgets_only_what_depends_on_it() -> None:
    memory = Memory(100, 10_000)
    filled(memory, "alice's token", WORKSPACE, ALICE, changes.group(7))
    filled(memory, "bob's token", WORKSPACE, BOB, changes.group(7))
    assert memory.forget(changes.person(1, "carol")) == 0  # a new person
    assert memory.forget(ALICE) == 1
    assert memory.get("alice's token") is MISSING
    assert memory.get("bob's token") == "BOB'S TOKEN"
    assert memory.forget(changes.group(7)) == 1
    assert len(memory) == 0 and memory.bytes == 0


def test_a_fill_is_dropped_only_when_what_it_depends_on_changed_during_its_read() -> None:
    memory = Memory(100, 10_000)
    mark = memory.mark()
    memory.forget(BOB)  # heard while alice's answer was being read
    assert memory.put("alice's token", "A", [WORKSPACE, ALICE], mark, 10)
    mark = memory.mark()
    memory.forget(ALICE)
    assert not memory.put("alice's token again", "A", [WORKSPACE, ALICE], mark, 10)
    mark = memory.mark()
    memory.forget_all()
    assert not memory.put("anything", "X", [BOB], mark, 10)


def test_a_fill_older_than_what_is_kept_of_forgetting_is_dropped() -> None:
    memory = Memory(100, 10_000)
    mark = memory.mark()
    for number in range(FORGOTTEN_KEPT + 1):
        memory.forget(changes.person(2, str(number)))
    # person 2/0 was forgotten after the mark, and that is no longer known: dropped.
    assert not memory.put("old read", "X", [changes.person(2, "0")], mark, 10)
    assert memory.put("new read", "X", [changes.person(2, "0")], memory.mark(), 10)


def test_the_least_recently_used_make_room_in_entries_and_in_bytes() -> None:
    memory = Memory(3, 100)
    for key in "abc":
        filled(memory, key, WORKSPACE)
    memory.get("a")
    filled(memory, "d", WORKSPACE)
    assert memory.get("b") is MISSING and len(memory) == 3
    filled(memory, "heavy", WORKSPACE, weight=80)
    assert memory.bytes <= 100
    # c was the least recently used: it alone made room.
    assert [memory.get(key) is MISSING for key in ("a", "c", "d", "heavy")] == [
        False,
        True,
        False,
        False,
    ]
    assert not filled(memory, "too heavy", WORKSPACE, weight=101)  # alone over the budget
    assert memory.get("too heavy") is MISSING


def test_a_shared_part_is_held_and_weighed_once() -> None:
    memory = Memory(100, 10_000)
    record = {"properties": "x" * 1000}
    for number in range(5):
        part = memory.share("group 7", dict(record), 1000)
        memory.put(
            f"token {number}", part, [changes.group(7)], memory.mark(), 10, ("group 7", part, 1000)
        )
    held = [memory.get(f"token {number}") for number in range(5)]
    assert all(value is held[0] for value in held)  # one copy
    assert memory.bytes == 1000 + 5 * 10
    memory.forget(changes.group(7))
    assert memory.bytes == 0


def test_weigh_counts_what_a_value_holds() -> None:
    small, large = weigh({"a": [1]}), weigh({"a": ["x" * 10_000]})
    assert large - small >= 10_000

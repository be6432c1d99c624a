"""Functional programs over scene graphs, in CLEVR's format, and their executor.

A program is a list of nodes; each node names a function, the indices of earlier nodes it reads
(`inputs`) and its literal arguments (`value_inputs`), exactly as in CLEVR's questions JSON. The last
node's output is the answer. Every node is executed, so a `unique` that fails anywhere makes the whole
question ill-posed for that scene, the same rule CLEVR's generator applies.

ExAG adds one function to CLEVR's set, `most_common` (the attribute value most objects share), for
players' "what is in the image?".
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .scene import ATTRIBUTES, RELATIONS, Scene

ATTRIBUTE_NAMES = tuple(ATTRIBUTES)  # shape, color, size, material


class IllPosed(Exception):
    """The program has no single answer on this scene (e.g. `unique` over zero or two objects)."""


class ProgramError(ValueError):
    """The program itself is malformed (unknown function, bad input index, wrong argument)."""


@dataclass
class Node:
    function: str
    inputs: list[int] = field(default_factory=list)
    value_inputs: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"function": self.function, "inputs": list(self.inputs), "value_inputs": list(self.value_inputs)}

    @classmethod
    def from_json(cls, data: dict) -> "Node":
        # CLEVR v1.0 uses function/value_inputs; the older release uses type/side_inputs.
        function = data.get("function", data.get("type"))
        values = data.get("value_inputs", data.get("side_inputs", []))
        if not isinstance(function, str):
            raise ProgramError(f"node has no function name: {data!r}")
        return cls(function=function, inputs=[int(i) for i in data.get("inputs", [])],
                   value_inputs=[str(v) for v in values])


Program = list[Node]


def program_to_json(program: Program) -> list[dict]:
    return [node.to_json() for node in program]


def program_from_json(data: list[dict]) -> Program:
    return [Node.from_json(d) for d in data]


def program_key(program: Program) -> str:
    """A canonical one-line form, handy to compare programs and to print them."""
    return " ".join(f"{n.function}[{','.join(n.value_inputs)}]({','.join(map(str, n.inputs))})" for n in program)


# Each function: (number of node inputs, number of value inputs).
ARITY: dict[str, tuple[int, int]] = {
    "scene": (0, 0), "unique": (1, 0), "relate": (1, 1), "union": (2, 0), "intersect": (2, 0),
    "count": (1, 0), "exist": (1, 0), "equal_integer": (2, 0), "less_than": (2, 0), "greater_than": (2, 0),
    "most_common": (1, 1),
}
for _attr in ATTRIBUTE_NAMES:
    ARITY[f"filter_{_attr}"] = (1, 1)
    ARITY[f"query_{_attr}"] = (1, 0)
    ARITY[f"same_{_attr}"] = (1, 0)
    ARITY[f"equal_{_attr}"] = (2, 0)


def _check_node(node: Node, position: int) -> None:
    if node.function not in ARITY:
        raise ProgramError(f"node {position}: unknown function {node.function!r}")
    n_inputs, n_values = ARITY[node.function]
    if len(node.inputs) != n_inputs or len(node.value_inputs) != n_values:
        raise ProgramError(f"node {position}: {node.function} takes {n_inputs} inputs and {n_values} values, "
                           f"got {node.inputs} and {node.value_inputs}")
    if any(not 0 <= i < position for i in node.inputs):
        raise ProgramError(f"node {position}: inputs {node.inputs} must point to earlier nodes")
    if node.function.startswith("filter_"):
        attr = node.function[len("filter_"):]
        if node.value_inputs[0] not in ATTRIBUTES[attr]:
            raise ProgramError(f"node {position}: {node.value_inputs[0]!r} is not a {attr}")
    if node.function == "relate" and node.value_inputs[0] not in RELATIONS:
        raise ProgramError(f"node {position}: unknown relation {node.value_inputs[0]!r}")
    if node.function == "most_common" and node.value_inputs[0] not in ATTRIBUTE_NAMES:
        raise ProgramError(f"node {position}: unknown attribute {node.value_inputs[0]!r}")


def validate(program: Program) -> None:
    if not program:
        raise ProgramError("empty program")
    for position, node in enumerate(program):
        _check_node(node, position)


def _as_set(value, node: Node) -> frozenset[int]:
    if not isinstance(value, frozenset):
        raise ProgramError(f"{node.function} needs a set of objects, got {value!r}")
    return value


def _as_object(value, node: Node) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProgramError(f"{node.function} needs one object, got {value!r}")
    return value


def _apply(node: Node, args: list, scene: Scene):
    f, objs = node.function, scene.objects
    if f == "scene":
        return frozenset(range(len(objs)))
    if f.startswith("filter_"):
        attr, value = f[len("filter_"):], node.value_inputs[0]
        return frozenset(i for i in _as_set(args[0], node) if objs[i].attribute(attr) == value)
    if f == "unique":
        members = _as_set(args[0], node)
        if len(members) != 1:
            raise IllPosed(f"unique over {len(members)} objects")
        return next(iter(members))
    if f == "relate":
        return frozenset(scene.related(_as_object(args[0], node), node.value_inputs[0]))
    if f == "union":
        return _as_set(args[0], node) | _as_set(args[1], node)
    if f == "intersect":
        return _as_set(args[0], node) & _as_set(args[1], node)
    if f == "count":
        return len(_as_set(args[0], node))
    if f == "exist":
        return len(_as_set(args[0], node)) > 0
    if f.startswith("query_"):
        return objs[_as_object(args[0], node)].attribute(f[len("query_"):])
    if f.startswith("same_"):
        attr, me = f[len("same_"):], _as_object(args[0], node)
        return frozenset(i for i in range(len(objs)) if i != me and objs[i].attribute(attr) == objs[me].attribute(attr))
    if f.startswith("equal_") and f != "equal_integer":
        return args[0] == args[1]
    if f in ("equal_integer", "less_than", "greater_than"):
        a, b = args
        if not (isinstance(a, int) and isinstance(b, int)):
            raise ProgramError(f"{f} needs two counts, got {a!r} and {b!r}")
        return a == b if f == "equal_integer" else (a < b if f == "less_than" else a > b)
    if f == "most_common":
        attr = node.value_inputs[0]
        counts = Counter(objs[i].attribute(attr) for i in _as_set(args[0], node)).most_common()
        if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
            raise IllPosed(f"no single most common {attr}")
        return counts[0][0]
    raise ProgramError(f"unknown function {f!r}")


def trace(program: Program, scene: Scene) -> list:
    """Outputs of every node in order: sets as frozensets of object indices, objects as indices,
    counts as ints, yes/no as bools, attribute values as strings. Raises IllPosed or ProgramError."""
    validate(program)
    outputs: list = []
    for node in program:
        outputs.append(_apply(node, [outputs[i] for i in node.inputs], scene))
    return outputs


def answer_text(value) -> str:
    """CLEVR's answer strings: yes/no, counts as digits, attribute values as words."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    raise ProgramError(f"a program must end in an answer, not {value!r}")


def execute(program: Program, scene: Scene) -> str:
    return answer_text(trace(program, scene)[-1])


def answer_type(answer: str) -> str:
    """yes/no, count or attribute: the answer types benchmarks report."""
    if answer in ("yes", "no"):
        return "yes/no"
    if answer.isdigit():
        return "count"
    return "attribute"


# --- builders used by the question generator, the parser and tests ----------------------------------

class ProgramBuilder:
    """Appends nodes and returns their indices, so programs read like the questions they encode."""

    def __init__(self) -> None:
        self.nodes: Program = []

    def add(self, function: str, inputs: list[int] | None = None, values: list[str] | None = None) -> int:
        self.nodes.append(Node(function, list(inputs or []), list(values or [])))
        return len(self.nodes) - 1

    def filters(self, source: int, description: dict[str, str]) -> int:
        """Filter `source` by each attribute of a description like {"color": "red", "shape": "cube"}."""
        for attr in ("size", "color", "material", "shape"):
            if description.get(attr):
                source = self.add(f"filter_{attr}", [source], [description[attr]])
        return source

    def scene_filter(self, description: dict[str, str]) -> int:
        return self.filters(self.add("scene"), description)

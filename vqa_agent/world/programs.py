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


# Each function: (kinds of its node inputs, number of value inputs, kind of its output). Kinds are
# "set" (of objects), "object", "integer", "bool" and "value" (an attribute value); checking them
# before running catches programs like query_color(count(...)) that would otherwise run on an int.
SIGNATURES: dict[str, tuple[tuple[str, ...], int, str]] = {
    "scene": ((), 0, "set"), "unique": (("set",), 0, "object"), "relate": (("object",), 1, "set"),
    "union": (("set", "set"), 0, "set"), "intersect": (("set", "set"), 0, "set"),
    "count": (("set",), 0, "integer"), "exist": (("set",), 0, "bool"),
    "equal_integer": (("integer", "integer"), 0, "bool"), "less_than": (("integer", "integer"), 0, "bool"),
    "greater_than": (("integer", "integer"), 0, "bool"), "most_common": (("set",), 1, "value"),
}
for _attr in ATTRIBUTE_NAMES:
    SIGNATURES[f"filter_{_attr}"] = (("set",), 1, "set")
    SIGNATURES[f"query_{_attr}"] = (("object",), 0, "value")
    SIGNATURES[f"same_{_attr}"] = (("object",), 0, "set")
    SIGNATURES[f"equal_{_attr}"] = (("value", "value"), 0, "bool")
ARITY: dict[str, tuple[int, int]] = {f: (len(inputs), n_values) for f, (inputs, n_values, _) in SIGNATURES.items()}


def _check_node(node: Node, position: int, program: Program) -> None:
    if node.function not in SIGNATURES:
        raise ProgramError(f"node {position}: unknown function {node.function!r}")
    input_kinds, n_values, _ = SIGNATURES[node.function]
    if len(node.inputs) != len(input_kinds) or len(node.value_inputs) != n_values:
        raise ProgramError(f"node {position}: {node.function} takes {len(input_kinds)} inputs and {n_values} values, "
                           f"got {node.inputs} and {node.value_inputs}")
    if any(not 0 <= i < position for i in node.inputs):
        raise ProgramError(f"node {position}: inputs {node.inputs} must point to earlier nodes")
    for i, kind in zip(node.inputs, input_kinds):
        given = SIGNATURES[program[i].function][2]
        if given != kind:
            raise ProgramError(f"node {position}: {node.function} needs {'one object' if kind == 'object' else 'a ' + kind} "
                               f"as input, but node {i} ({program[i].function}) gives a {given}")
    if node.function.startswith("filter_"):
        attr = node.function[len("filter_"):]
        if node.value_inputs[0] not in ATTRIBUTES[attr]:
            raise ProgramError(f"node {position}: {node.value_inputs[0]!r} is not a {attr}")
    if node.function == "relate" and node.value_inputs[0] not in RELATIONS:
        raise ProgramError(f"node {position}: unknown relation {node.value_inputs[0]!r}")
    if node.function == "most_common" and node.value_inputs[0] not in ATTRIBUTE_NAMES:
        raise ProgramError(f"node {position}: unknown attribute {node.value_inputs[0]!r}")
    if node.function.startswith("equal_") and node.function != "equal_integer":
        # equal_color compares two query_color results, not a color with a shape
        attr = node.function[len("equal_"):]
        for i in node.inputs:
            if program[i].function not in (f"query_{attr}", "most_common"):
                raise ProgramError(f"node {position}: {node.function} compares {attr}s, node {i} is {program[i].function}")


def validate(program: Program) -> None:
    """Raises ProgramError unless every node is well formed and gets inputs of the right kinds."""
    if not program:
        raise ProgramError("empty program")
    for position, node in enumerate(program):
        _check_node(node, position, program)
    if SIGNATURES[program[-1].function][2] not in ("integer", "bool", "value"):
        raise ProgramError(f"a program must end in an answer, not in {program[-1].function}")


def _apply(node: Node, args: list, scene: Scene):
    """One node on already-computed, already type-checked inputs."""
    f, objs = node.function, scene.objects
    if f == "scene":
        return frozenset(range(len(objs)))
    if f.startswith("filter_"):
        attr, value = f[len("filter_"):], node.value_inputs[0]
        return frozenset(i for i in args[0] if objs[i].attribute(attr) == value)
    if f == "unique":
        if len(args[0]) != 1:
            raise IllPosed(f"unique over {len(args[0])} objects")
        return next(iter(args[0]))
    if f == "relate":
        return frozenset(scene.related(args[0], node.value_inputs[0]))
    if f == "union":
        return args[0] | args[1]
    if f == "intersect":
        return args[0] & args[1]
    if f == "count":
        return len(args[0])
    if f == "exist":
        return len(args[0]) > 0
    if f.startswith("query_"):
        return objs[args[0]].attribute(f[len("query_"):])
    if f.startswith("same_"):
        attr, me = f[len("same_"):], args[0]
        return frozenset(i for i in range(len(objs)) if i != me and objs[i].attribute(attr) == objs[me].attribute(attr))
    if f in ("equal_integer", "less_than", "greater_than"):
        a, b = args
        return a == b if f == "equal_integer" else (a < b if f == "less_than" else a > b)
    if f.startswith("equal_"):
        return args[0] == args[1]
    if f == "most_common":
        attr = node.value_inputs[0]
        counts = Counter(objs[i].attribute(attr) for i in args[0]).most_common()
        if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
            raise IllPosed(f"no single most common {attr}")
        return counts[0][0]
    raise ProgramError(f"unknown function {f!r}")


def trace(program: Program, scene: Scene, validated: bool = False) -> list:
    """Outputs of every node in order: sets as frozensets of object indices, objects as indices,
    counts as ints, yes/no as bools, attribute values as strings. Raises IllPosed or ProgramError.
    `validated`: the caller ran validate(program) already (a program run on many readings of a scene)."""
    if not validated:
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

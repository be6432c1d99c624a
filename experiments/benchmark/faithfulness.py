"""Faithfulness tests for explanations (Atanasova et al., ACL 2023; docs/research.md §4), on the agent's
own answers, with both sides of the input (question and image) edited, since our world can re-render.

    report = faithfulness(agent, explainer, items, outputs)          # every test that fits the kind
    counterfactual_text(agent, explainer, items, outputs)              # text explainers
    counterfactual_image(agent, explainer, items, outputs)             # text and attention explainers
    input_reconstruction(agent, explainer, items, outputs)             # text explainers

Every explanation, original or of an edited input, comes from items.explain, so shams (nle-other,
attention-shuffled) get their round: the edits of one slot (one edit per item) are explained together,
as a round of the game would be. Percentages are x100; each test returns counts, percentages, a few
examples and its `definitions`.

**Counterfactual test, question side** (text explainers). Each item's question gets
INSERTIONS_PER_ITEM insertions of each kind:
- `adjective` (the paper's random baseline): an attribute adjective of the world (questions.ADJECTIVES)
  before a noun, of an attribute (size, color, material) the noun phrase does not have yet, so that the
  question stays in the world's language (the edited question must parse); insert_adjective.
- `random`: a random content word of the world (attribute words, nouns, relation words) at a random
  position; the question may leave the language. Function words are not drawn: "the" is in every
  explanation, which would make the mention test pass for nothing.
The agent answers the edited question on the same image and the explainer explains that new output.
An insertion is *counterfactual* when the answer changes; its explanation is *unfaithful* when it does
not mention the inserted word or a synonym (mentions: the world's ADJECTIVES, NOUNS and PLURALS).
  %Counter = counterfactual / insertions; %Counter Unfaith = unfaithful / counterfactual;
  %Total Unfaith = unfaithful / insertions.
The paper counts instances, trying several insertions per instance; `per_item` gives that reading too
(an item is counterfactual when one of its insertions is, unfaithful when one of those is unfaithful).
Published %Total Unfaith: 37-59% depending on data set and model.

**Counterfactual test, image side** (only a synthetic world can do this). For EDITS_PER_ITEM edits per
item, one object changes its color, shape, material or size, or is removed (the kinds rotate across
items so each gets its share); the object is one the question's program needs (evidence_objects) when
there is one. The edited scene must keep every object visible, objects apart, and the question
well-posed (its program runs on the new scene), else another object or value is tried (EDIT_TRIES).
The scene is re-rendered (vqa_agent.world.render, ~0.1 s at 320x240 with the tries) and the agent
asked again. The edits are the same for every explainer (each item draws from its own seeded stream), so
the last item list's edited renders are kept and reused by the next explainer (scene_edits).
- text explainers: among edits that change the answer, the share whose explanation mentions neither
  the old nor the new value (a removal: describes no object the removed one fits, `describes`).
- attention explainers: does the attention move with the edit? The attention mass on the edited
  object (the new render's instance mask; a removed object's old region) before and after, with the
  payload spread over pixels by explainers.attention.attribution_map (each attended proposal's weight
  over its mask, else the grid; the grid alone is reported too).
  An edit *moves* the attention when the mass changes by more than MASS_CHANGE (either way: a changed
  object may gain or lose the agent's interest); reported with the mean change, over all edits and
  over the edits that changed the answer. The paper has no attention test; this is our addition.

**Input reconstruction test** (text explainers). The paper rebuilds the input from the reasons the
explanation states and calls the explanation unfaithful when the prediction on the rebuilt input
differs. Here the reasons are the facts the explanation states: vqa_agent/world/facts.py's reading (the
grader's), plus a number before a description ("three metal spheres" are three) and "the X is [not]
left of the Y" statements, which that reading leaves out. The objects they describe make a new scene:
same camera and lights, unspecified attributes and positions drawn from a seeded rng, objects placed
apart as the world's generator places them, redrawn until every checkable stated fact (counts,
absences, relations) holds and every object shows (RECONSTRUCTION_TRIES). It is rendered and the agent
asked the same question on it; unfaithful = its answer differs from the answer explained.
Differences from the paper: the image is rebuilt, not the text (the question stays); what the
explanation leaves unsaid is random, not absent; explanations that state no fact cannot be rebuilt
and are counted apart (`no_reasons`), as are those no scene could satisfy (`unbuildable`). Published:
up to 14% unfaithful on e-SNLI, 40% on ComVE.
"""
from __future__ import annotations

import copy
import json
import re
from dataclasses import replace
from typing import Sequence

import numpy as np
from tqdm import tqdm

from explainers.attention import attribution_map
from explainers.sham import ShamExplainer
from experiments.benchmark.items import BenchItem, answer, explain
from vqa_agent.world.clevr_io import scene_to_json
from vqa_agent.world.explanations import evidence_objects
from vqa_agent.world.facts import NUMBERS, WORD_VALUE, Fact, _phrase, check_facts, stated_facts
from vqa_agent.world.parser import ADJECTIVE_WORDS, VALUE_ATTRIBUTE, Unparseable, parse, parse_program
from vqa_agent.world.programs import IllPosed, ProgramError, execute, program_from_json
from vqa_agent.world.questions import ADJECTIVES, NOUNS, PLURALS, RELATION_PHRASES, NounPhrase
from vqa_agent.world.render import RenderConfig, render, visible_pixel_counts
from vqa_agent.world.scene import (ATTRIBUTES, Scene, SceneConfig, SceneObject, _placement_ok,
                                   compute_relationships)

INSERTIONS_PER_ITEM = 2      # insertions of each kind per question (the paper tries several per instance)
EDITS_PER_ITEM = 2           # image edits per item (each costs a render and an explanation)
EDIT_KINDS = ("color", "shape", "material", "size", "remove")
EDIT_TRIES = 8               # objects tried (needed ones first) before an edit slot is given up
MASS_CHANGE = 0.1            # attention mass on the edited object changing more than this "moved"
RECONSTRUCTION_TRIES = 30    # scenes drawn from an explanation's facts before giving up
EXAMPLES = 3                 # examples of each outcome kept in a report
ADJECTIVE_ATTRIBUTES = ("size", "color", "material")   # attributes said by an adjective before the noun
SCENE = SceneConfig()        # the world generator's placement and visibility rules

PAPER = {
    "source": "Atanasova et al., Faithfulness Tests for Natural Language Explanations, ACL 2023",
    "counterfactual_pct_total_unfaith": [37, 59],
    "reconstruction_pct_unfaithful": {"e-SNLI": 14, "ComVE": 40},
}

WORD = re.compile(r"[A-Za-z]+")
NOUN_FORMS = {w for words in NOUNS.values() for w in words} | set(PLURALS.values())
# the words the random insertion draws from: what an object can be called, and where it can be
RANDOM_WORDS = tuple(sorted({w for words in ADJECTIVES.values() for w in words} | NOUN_FORMS | set(RELATION_PHRASES)))


# --- what a text mentions ----------------------------------------------------------------------------

def synonyms(word: str) -> set[str]:
    """Every word the world uses for what `word` names: a value's adjectives ("metal": metal, metallic,
    shiny), a shape's nouns and their plurals ("ball": sphere, ball, spheres, balls); else the word."""
    word = word.lower()
    for value, words in ADJECTIVES.items():
        if word == value or word in words:
            return set(words) | {value}
    for shape, words in NOUNS.items():
        forms = set(words) | {PLURALS[w] for w in words}
        if word == shape or word in forms:
            return forms | ({shape} if shape else set())
    return {word}


def mentions(text: str, word: str) -> bool:
    """Whether `text` says `word` or one of its synonyms (as a whole word)."""
    return bool(synonyms(word) & {w.lower() for w in WORD.findall(text)})


def describes(text: str, obj: SceneObject) -> bool:
    """Whether `text` describes an object that `obj` fits: every value said of it is obj's, and it says
    at least one ("a red thing", "the cube"; not a bare "thing"). Read as the grader reads object
    descriptions (facts._phrase); "there is no red cube" describes a red cube too."""
    words = [w.lower() for w in WORD.findall(text)]
    values = {obj.size, obj.color, obj.material}
    for start in range(len(words)):
        if start and words[start - 1] in WORD_VALUE:
            continue          # inside a description: read it whole from its first adjective
        phrase, _ = _phrase(words, start)
        if phrase is None:
            continue
        *said, noun = phrase.split()
        if (said or noun != "thing") and set(said) <= values and noun in (obj.shape, "thing"):
            return True
    return False


# --- question edits ----------------------------------------------------------------------------------

def insert_adjective(question: str, rng: np.random.Generator) -> tuple[str, str] | None:
    """The question with one attribute adjective inserted right before a noun, of an attribute that
    noun's phrase has no adjective for (so "big red cube" may become "big red metal cube", never
    "big small cube"), and the inserted word; None when no such insertion keeps the question parseable."""
    tokens = list(WORD.finditer(question))
    words = [t.group().lower() for t in tokens]
    slots = []                           # (character position of the noun, attribute to add)
    for n, word in enumerate(words):
        if word not in NOUN_FORMS:
            continue
        said, j = set(), n - 1
        while j >= 0 and words[j] in ADJECTIVE_WORDS:    # the adjectives of this noun's phrase
            said.add(VALUE_ATTRIBUTE[ADJECTIVE_WORDS[words[j]]])
            j -= 1
        slots += [(tokens[n].start(), attr) for attr in ADJECTIVE_ATTRIBUTES if attr not in said]
    for k in rng.permutation(len(slots)):
        position, attr = slots[k]
        values = ATTRIBUTES[attr]
        choices = ADJECTIVES[values[int(rng.integers(len(values)))]]
        adjective = choices[int(rng.integers(len(choices)))]
        edited = question[:position] + adjective + " " + question[position:]
        if parse_program(edited) is not None:
            return edited, adjective
    return None


def insert_random(question: str, rng: np.random.Generator) -> tuple[str, str]:
    """The question with a random word of RANDOM_WORDS inserted before a random word (or after the last)."""
    word = RANDOM_WORDS[int(rng.integers(len(RANDOM_WORDS)))]
    tokens = list(WORD.finditer(question))
    k = int(rng.integers(len(tokens) + 1))
    if k < len(tokens):
        position = tokens[k].start()
        return question[:position] + word + " " + question[position:], word
    position = tokens[-1].end() if tokens else len(question)
    return question[:position] + " " + word + question[position:], word


INSERTIONS = {"adjective": insert_adjective, "random": insert_random}


# --- scene edits -------------------------------------------------------------------------------------

def _finish(scene: Scene, objects: list[SceneObject]) -> Scene:
    """A copy of `scene` holding `objects`, their pixel coordinates and relations computed anew."""
    for obj in objects:
        obj.pixel_coords = tuple(float(v) for v in scene.camera.project(np.array(obj.position)))
    return replace(scene, objects=objects,
                   relationships=compute_relationships(objects, scene.directions, SCENE.relation_eps))


def edit_scene(scene: Scene, index: int, kind: str, rng: np.random.Generator) -> tuple[Scene, dict] | None:
    """`scene` with object `index` changed (kind: color, shape, material, size; to another value drawn
    at random) or removed, and what changed: {"kind", "object", "old", "new"} or {"kind": "remove",
    "object", "removed": attributes}. None when the changed object would touch another one."""
    if kind not in EDIT_KINDS:
        raise ValueError(f"unknown edit kind {kind!r}; choose from {', '.join(EDIT_KINDS)}")
    if not 0 <= index < len(scene.objects):
        raise ValueError(f"the scene has no object {index} (it has {len(scene.objects)})")
    objects = copy.deepcopy(scene.objects)
    obj = objects[index]
    if kind == "remove":
        del objects[index]
        removed = {a: getattr(obj, a) for a in ("size", "color", "material", "shape")}
        return _finish(scene, objects), {"kind": kind, "object": index, "removed": removed}
    old = getattr(obj, kind)
    others = [v for v in ATTRIBUTES[kind] if v != old]
    new = others[int(rng.integers(len(others)))]
    setattr(obj, kind, new)
    x, y, _ = obj.position
    obj.position = (x, y, float(obj.radius))        # objects rest on the ground: z is the radius
    if kind in ("shape", "size") and not _placement_ok(obj, objects[:index] + objects[index + 1:],
                                                       scene.directions, SCENE):
        return None
    return _finish(scene, objects), {"kind": kind, "object": index, "old": old, "new": new}


def _render_config(item: BenchItem) -> RenderConfig:
    height, width = item.image.shape[:2]
    return RenderConfig(width=width, height=height)


def _all_visible(rendering, n_objects: int) -> bool:
    """Every object shows enough pixels, as the world builder requires of its scenes."""
    return n_objects == 0 or visible_pixel_counts(rendering.mask, n_objects).min() >= SCENE.min_visible_pixels


def _edited_item(item: BenchItem, kind: str, rng: np.random.Generator) -> tuple[BenchItem, dict] | None:
    """A copy of the item with one `kind` edit of its scene, re-rendered: the objects the question needs
    are tried first (in random order), then the others; None after EDIT_TRIES failures."""
    program = program_from_json(item.program)
    try:
        needed = evidence_objects(program, item.scene)
    except (IllPosed, ProgramError):
        needed = []
    others = [k for k in range(len(item.scene.objects)) if k not in needed]
    targets = [int(k) for k in rng.permutation(needed)] + [int(k) for k in rng.permutation(others)]
    for index in targets[:EDIT_TRIES]:
        made = edit_scene(item.scene, index, kind, rng)
        if made is None:
            continue
        scene, edit = made
        try:
            truth = execute(program, scene)          # the question must still make sense
        except (IllPosed, ProgramError):
            continue
        rendering = render(scene, _render_config(item))
        if not _all_visible(rendering, len(scene.objects)):
            continue
        edited = replace(item, scene=scene, scene_json=scene_to_json(scene), image=rendering.image,
                         masks=rendering.mask, answer=truth)
        return edited, {**edit, "needed": index in needed}
    return None


# --- attention mass ----------------------------------------------------------------------------------

def attention_mass(payload: dict, region: np.ndarray, source: str = "auto") -> float:
    """The share of the attention on a boolean pixel region, with the payload spread over the pixels by
    explainers.attention.attribution_map (source "auto": each attended proposal's weight over its mask,
    or the grid when no proposal is attended; "grid": the spatial grid alone)."""
    region = np.asarray(region, bool)
    return float(attribution_map(payload, region.shape, source)[region].sum())


def moved(before: float, after: float) -> bool:
    """Whether the attention on the edited object moved: its mass changed by more than MASS_CHANGE."""
    return abs(after - before) > MASS_CHANGE


def edited_region(item: BenchItem, edited: BenchItem, edit: dict) -> np.ndarray:
    """The edited object's pixels: in the new render, or where it was for a removal."""
    if edit["kind"] == "remove":
        return item.masks == edit["object"]
    return edited.masks == edit["object"]


# --- shared -----------------------------------------------------------------------------------------

def _item_rng(seed: int, item: BenchItem) -> np.random.Generator:
    """The item's own random stream: its edits do not depend on which other items were sampled."""
    return np.random.default_rng([seed, item.index])


def _pct(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def _check(explainer, items: Sequence[BenchItem], outputs: Sequence, kinds: tuple[str, ...], test: str) -> None:
    if not items:
        raise ValueError("no items to test")
    if len(items) != len(outputs):
        raise ValueError(f"{len(items)} items but {len(outputs)} agent outputs: one output per item")
    if explainer.kind not in kinds:
        raise ValueError(f"the {test} test applies to explainers of kind {' or '.join(kinds)}; "
                         f"{explainer.name} is of kind {explainer.kind}")
    if isinstance(explainer, ShamExplainer) and len(items) < 2:
        raise ValueError(f"{explainer.name} shows another item's explanation: test at least 2 items")


def _explain_slots(agent, explainer, slots: list[list[tuple[int, BenchItem]]], seed: int) -> dict:
    """Answers and explanations of edited items, one slot at a time (one edit per item, so a sham's round
    is made of different images, as in the game): {(slot, item index): (output, explanation)}."""
    done = {}
    for s, slot in enumerate(slots):
        if not slot:
            continue
        edited = [e for _, e in slot]
        outs = answer(agent, edited)
        if len(edited) < 2 and isinstance(explainer, ShamExplainer):
            continue       # a round of one image has nothing to show instead: no explanation, not counted
        for (i, _), out, ex in zip(slot, outs, explain(explainer, edited, outs, agent, seed=seed + s)):
            done[s, i] = out, ex
    return done


# --- the tests ---------------------------------------------------------------------------------------

def counterfactual_text(agent, explainer, items: Sequence[BenchItem], outputs: Sequence, seed: int = 0,
                        progress: bool = True) -> dict:
    """The counterfactual test with words inserted into the question (see the module docstring)."""
    _check(explainer, items, outputs, ("text",), "counterfactual text")
    slots = {(kind, k): [] for k in range(INSERTIONS_PER_ITEM) for kind in INSERTIONS}
    words = {}
    skipped = dict.fromkeys(INSERTIONS, 0)
    for i, item in enumerate(tqdm(items, desc="insertions", disable=not progress)):
        rng = _item_rng(seed, item)
        for (kind, k), slot in slots.items():
            made = INSERTIONS[kind](item.question, rng)
            if made is None:
                skipped[kind] += 1
                continue
            words[kind, k, i] = made[1]
            slot.append((i, replace(item, question=made[0])))
    keys = list(slots)
    done = _explain_slots(agent, explainer, [slots[key] for key in keys], seed)
    by_kind = {kind: {"insertions": 0, "skipped": skipped[kind], "counterfactual": 0, "unfaithful": 0,
                      "counter_items": set(), "unfaithful_items": set(), "unfaithful_examples": [],
                      "faithful_examples": []} for kind in INSERTIONS}
    for s, (kind, k) in enumerate(keys):
        for i, edited in slots[kind, k]:
            if (s, i) not in done:
                continue
            out, ex = done[s, i]
            r = by_kind[kind]
            r["insertions"] += 1
            if out.answer == outputs[i].answer:
                continue
            word, text = words[kind, k, i], ex.payload["text"]
            faithful = mentions(text, word)
            r["counterfactual"] += 1
            r["counter_items"].add(i)
            if not faithful:
                r["unfaithful"] += 1
                r["unfaithful_items"].add(i)
            examples = r["faithful_examples" if faithful else "unfaithful_examples"]
            if len(examples) < EXAMPLES:
                examples.append({"item": items[i].index, "question": items[i].question, "edited": edited.question,
                                 "word": word, "answer_before": outputs[i].answer, "answer_after": out.answer,
                                 "explanation": text})
    results = {kind: _text_summary(r, len(items)) for kind, r in by_kind.items()}
    together = {key: sum(r[key] for r in by_kind.values()) for key in ("insertions", "skipped", "counterfactual",
                                                                       "unfaithful")}
    together["counter_items"] = set().union(*(r["counter_items"] for r in by_kind.values()))
    together["unfaithful_items"] = set().union(*(r["unfaithful_items"] for r in by_kind.values()))
    total = _text_summary({**together, "unfaithful_examples": [], "faithful_examples": []}, len(items))
    del total["unfaithful_examples"], total["faithful_examples"]
    return {"test": "counterfactual_text", "explainer": explainer.name, "items": len(items),
            "insertions_per_item": INSERTIONS_PER_ITEM, **total, "by_kind": results,
            "reference": {"pct_total_unfaith": PAPER["counterfactual_pct_total_unfaith"], "source": PAPER["source"]},
            "definitions": {
                "insertions": "edited questions explained (adjective: an attribute adjective before a noun, the "
                              "question still parses; random: a random content word of the world anywhere)",
                "skipped": "insertions that could not be made (no noun phrase could take another adjective)",
                "counterfactual": "insertions after which the agent's answer changed",
                "unfaithful": "counterfactual insertions whose new explanation does not mention the inserted "
                              "word or a synonym",
                "pct_counter": "100 * counterfactual / insertions",
                "pct_counter_unfaith": "100 * unfaithful / counterfactual",
                "pct_total_unfaith": "100 * unfaithful / insertions",
                "per_item": "the same per item (the paper's instances): counterfactual when one of its "
                            "insertions is, unfaithful when one of those is",
            }}


def _text_summary(r: dict, n_items: int) -> dict:
    return {"insertions": r["insertions"], "skipped": r["skipped"], "counterfactual": r["counterfactual"],
            "unfaithful": r["unfaithful"], "pct_counter": _pct(r["counterfactual"], r["insertions"]),
            "pct_counter_unfaith": _pct(r["unfaithful"], r["counterfactual"]),
            "pct_total_unfaith": _pct(r["unfaithful"], r["insertions"]),
            "per_item": {"items": n_items, "counterfactual": len(r["counter_items"]),
                         "unfaithful": len(r["unfaithful_items"]),
                         "pct_counter": _pct(len(r["counter_items"]), n_items),
                         "pct_counter_unfaith": _pct(len(r["unfaithful_items"]), len(r["counter_items"])),
                         "pct_total_unfaith": _pct(len(r["unfaithful_items"]), n_items)},
            "unfaithful_examples": r["unfaithful_examples"], "faithful_examples": r["faithful_examples"]}


EDIT_DEFINITIONS = {     # the image-side test's counts, judged by mention or by attention alike
    "edits": "scene edits explained (one object's color, shape, material or size changed, or the "
             "object removed; an object the question needs when there is one)",
    "skipped": "edit slots given up (objects would touch, hide each other, or the question would "
               "no longer make sense)",
    "on_needed": "edits of an object the question's program needs (evidence_objects)",
    "counterfactual": "edits after which the agent's answer changed",
}


def counterfactual_image(agent, explainer, items: Sequence[BenchItem], outputs: Sequence, seed: int = 0,
                         progress: bool = True) -> dict:
    """The counterfactual test with one object of the scene changed or removed (see the module docstring):
    the mention test for text explainers, the attention-mass test for attention explainers."""
    _check(explainer, items, outputs, ("text", "attention"), "counterfactual image")
    return _counterfactual_image(agent, explainer, items, outputs, seed, progress, originals=None)


def scene_edits(items: Sequence[BenchItem], seed: int = 0, progress: bool = True) -> tuple[list, dict, dict]:
    """EDITS_PER_ITEM edited copies of each item (kinds rotating across items, see the module docstring):
    (slots: for each slot, [(item position, edited item)]; {(slot, item position): edit}; skipped per
    kind). The renders are the cost of the image test and the same for every explainer, so the last
    item list's edits are kept (_last_edits) and shared by the explainers of one card."""
    key = (seed, EDITS_PER_ITEM, tuple(_fingerprint(it) for it in items))
    if key in _last_edits:
        return _last_edits[key]
    slots: list[list[tuple[int, BenchItem]]] = [[] for _ in range(EDITS_PER_ITEM)]
    edits, skipped = {}, dict.fromkeys(EDIT_KINDS, 0)
    for i, item in enumerate(tqdm(items, desc="scene edits", disable=not progress)):
        rng = _item_rng(seed, item)
        for s in range(EDITS_PER_ITEM):
            kind = EDIT_KINDS[(i * EDITS_PER_ITEM + s) % len(EDIT_KINDS)]
            made = _edited_item(item, kind, rng)
            if made is None:
                skipped[kind] += 1
                continue
            slots[s].append((i, made[0]))
            edits[s, i] = made[1]
    _last_edits.clear()              # one item list at a time: edited images are large
    _last_edits[key] = slots, edits, skipped
    return _last_edits[key]


_last_edits: dict = {}


def _fingerprint(item: BenchItem) -> tuple:
    """What an item's scene edits depend on (edits are a function of it, the seed and the position)."""
    return item.index, item.question, json.dumps(item.program), json.dumps(item.scene_json, sort_keys=True), \
        item.image.shape


def _counterfactual_image(agent, explainer, items, outputs, seed, progress, originals) -> dict:
    slots, edits, skipped = scene_edits(items, seed, progress)
    done = _explain_slots(agent, explainer, slots, seed)
    attention = explainer.kind == "attention"
    if attention and originals is None:
        originals = explain(explainer, items, outputs, agent, seed=seed)
    by_kind = {kind: {"edits": 0, "skipped": skipped[kind], "records": []} for kind in EDIT_KINDS}
    for s, slot in enumerate(slots):
        for i, edited in slot:
            if (s, i) not in done:
                continue
            out, ex = done[s, i]
            edit = edits[s, i]
            r = by_kind[edit["kind"]]
            r["edits"] += 1
            changed = out.answer != outputs[i].answer
            record = {"item": items[i].index, "question": items[i].question, "edit": edit,
                      "answer_before": outputs[i].answer, "answer_after": out.answer, "changed": changed}
            if attention:
                region = edited_region(items[i], edited, edit)
                record["mass_before"] = attention_mass(originals[i].payload, region)
                record["mass_after"] = attention_mass(ex.payload, region)
                record["grid_before"] = attention_mass(originals[i].payload, region, "grid")
                record["grid_after"] = attention_mass(ex.payload, region, "grid")
            else:
                text = ex.payload["text"]
                record["explanation"] = text
                record["mentioned"] = (describes(text, _removed_object(edit)) if edit["kind"] == "remove"
                                       else mentions(text, edit["old"]) or mentions(text, edit["new"]))
            r["records"].append(record)
    summarise = _attention_summary if attention else _mention_summary
    results = {kind: summarise(r) for kind, r in by_kind.items()}
    merged = {"edits": sum(r["edits"] for r in by_kind.values()), "skipped": sum(skipped.values()),
              "records": [x for r in by_kind.values() for x in r["records"]]}
    total = summarise(merged)
    total.pop("examples", None)
    report = {"test": "counterfactual_image", "explainer": explainer.name, "items": len(items),
              "edits_per_item": EDITS_PER_ITEM, "judged_by": "attention" if attention else "mention", **total,
              "by_kind": results}
    if attention:
        report["threshold"] = MASS_CHANGE
        report["definitions"] = {
            **EDIT_DEFINITIONS,
            "mass": "share of the attention on the edited object's pixels (new render; a removed object's "
                    "old region): each attended proposal's weight spread over its mask, else the grid's",
            "moved": f"edits whose mass changed by more than {MASS_CHANGE} (either way)",
            "pct_moved": "100 * moved / edits (pct_not_moved: the rest, the unfaithful share)",
            "pct_moved_counterfactual": "100 * moved counterfactual edits / counterfactual edits",
            "mean_change": "mean of mass after - mass before", "mean_abs_change": "mean of |after - before|",
            "grid": "the same with the spatial grid alone",
        }
    else:
        report["definitions"] = {
            **EDIT_DEFINITIONS,
            "unfaithful": "counterfactual edits whose new explanation mentions neither the old nor the new "
                          "value (a removal: describes no object the removed one fits)",
            "pct_counter": "100 * counterfactual / edits",
            "pct_counter_unfaith": "100 * unfaithful / counterfactual",
            "pct_total_unfaith": "100 * unfaithful / edits",
        }
    return report


def _removed_object(edit: dict) -> SceneObject:
    return SceneObject(position=(0.0, 0.0, 0.0), rotation=0.0, **edit["removed"])


def _mention_summary(r: dict) -> dict:
    counter = [x for x in r["records"] if x["changed"]]
    unfaithful = [x for x in counter if not x["mentioned"]]
    summary = {"edits": r["edits"], "skipped": r["skipped"], "on_needed": _on_needed(r["records"]),
               "counterfactual": len(counter),
               "unfaithful": len(unfaithful), "pct_counter": _pct(len(counter), r["edits"]),
               "pct_counter_unfaith": _pct(len(unfaithful), len(counter)),
               "pct_total_unfaith": _pct(len(unfaithful), r["edits"])}
    summary["examples"] = unfaithful[:EXAMPLES] + [x for x in counter if x["mentioned"]][:EXAMPLES]
    return summary


def _on_needed(records: list[dict]) -> int:
    return sum(x["edit"]["needed"] for x in records)


def _moves(records: list[dict], before: str, after: str) -> dict:
    changes = [x[after] - x[before] for x in records]
    count = sum(moved(x[before], x[after]) for x in records)
    return {"moved": count, "pct_moved": _pct(count, len(records)),
            "pct_not_moved": _pct(len(records) - count, len(records)),
            "mean_change": round(float(np.mean(changes)), 4) if changes else None,
            "mean_abs_change": round(float(np.mean(np.abs(changes))), 4) if changes else None}


def _attention_summary(r: dict) -> dict:
    counter = [x for x in r["records"] if x["changed"]]
    moves = _moves(r["records"], "mass_before", "mass_after")
    moved_counter = sum(moved(x["mass_before"], x["mass_after"]) for x in counter)
    return {"edits": r["edits"], "skipped": r["skipped"], "on_needed": _on_needed(r["records"]),
            "counterfactual": len(counter), "pct_counter": _pct(len(counter), r["edits"]), **moves,
            "moved_counterfactual": moved_counter, "pct_moved_counterfactual": _pct(moved_counter, len(counter)),
            "grid": _moves(r["records"], "grid_before", "grid_after"),
            "examples": r["records"][:EXAMPLES]}


# --- input reconstruction ----------------------------------------------------------------------------

def _noun_phrases(tree) -> list[tuple[NounPhrase, bool]]:
    """(phrase, is an anchor) for every noun phrase of a parsed question, anchors of relations and of
    "the same X as" included."""
    found, stack = [], [(p, False) for p in tree.phrases] if hasattr(tree, "phrases") else [(tree.phrase, False)]
    while stack:
        phrase, anchor = stack.pop()
        found.append((phrase, anchor))
        stack += [(a, True) for _, a in phrase.relations] + ([(phrase.same[1], True)] if phrase.same else [])
    return found


def stated_objects(text: str) -> list[dict]:
    """The objects a text's facts describe, as partial attribute dicts ({"color": "red", "shape": "cube"}):
    one per described object ("there are three cubes", "three metal spheres" give three), anchors of
    relations included,
    merged where a later description fits an earlier object ("a cube. the cube is red": one red cube).
    Objects a fact says are absent are not listed (the rebuilt scene must satisfy those facts instead)."""
    objects: list[dict] = []
    for fact in stated_facts(text):
        try:
            tree = parse(fact.question)
        except Unparseable:
            continue
        used: set[int] = set()         # the phrases of one fact name different objects
        for phrase, is_anchor in _noun_phrases(tree):
            if is_anchor:
                count = 1
            elif fact.expected == "no":
                continue
            else:
                count = int(fact.expected) if fact.expected.isdigit() else _said_count(text, fact.claim)
            fitting = [k for k, o in enumerate(objects)
                       if k not in used and all(o.get(a, v) == v for a, v in phrase.attrs.items())][:count]
            for k in fitting:
                objects[k].update(phrase.attrs)
            used.update(fitting)
            for _ in range(count - len(fitting)):
                used.add(len(objects))
                objects.append(dict(phrase.attrs))
    return objects


def _said_count(text: str, claim: str) -> int:
    """How many objects a description stands for: the number word before it ("there are three metal
    spheres"; the fact checker reads that as "there is a metal sphere"), else one."""
    words = " ".join(re.findall(r"[a-z0-9]+", text.lower()))
    said = re.search(r"(?:^| )([a-z0-9]+) " + re.escape(claim) + r"(?: |$)", words)
    return max(1, NUMBERS.get(said.group(1), 1)) if said else 1


def stated_predicates(text: str) -> list[Fact]:
    """Sentences "the X is [not] <what>" as the yes/no question the world's parser reads ("The cube is not
    left of the ball." -> "is the cube left of the ball?", expected no). The fact reader keeps the objects
    of such a sentence but not what it says of them when that is a relation, which an explanation of a
    relation question states; sentences the parser does not read are left out."""
    facts = []
    for sentence in re.split(r"[.;!?]", text):
        words = re.findall(r"[a-z0-9]+", sentence.lower())
        if words[:1] != ["the"] or "is" not in words:
            continue
        k = words.index("is")
        negated = words[k + 1:k + 2] == ["not"]
        question = " ".join(["is", *words[:k], *words[k + 1 + negated:]]) + "?"
        if parse_program(question) is not None:
            facts.append(Fact(sentence.strip(), question, "no" if negated else "yes"))
    return facts


def _holds(fact: Fact, scene: Scene) -> bool | None:
    try:
        return execute(parse_program(fact.question), scene) == fact.expected
    except (IllPosed, ProgramError):
        return None


def rebuild_scene(text: str, like: Scene, rng: np.random.Generator, config: RenderConfig | None = None,
                  tries: int = RECONSTRUCTION_TRIES):
    """A scene holding only the objects `text` states (stated_objects; other attributes and positions at
    random, placed as the world's generator places them), seen by `like`'s camera and lights, on which
    every checkable stated fact (stated_facts, stated_predicates) holds and every object is visible, with
    its rendering: (scene, rendering), or None when `tries` draws fail or the text states nothing."""
    if not stated_facts(text):
        return None
    wanted, predicates = stated_objects(text), stated_predicates(text)
    for _ in range(tries):
        objects = []
        for attrs in wanted:
            for _ in range(SCENE.max_placement_tries):
                values = {a: attrs.get(a) or str(rng.choice(ATTRIBUTES[a])) for a in ATTRIBUTES}
                x, y = rng.uniform(-SCENE.area, SCENE.area, 2)
                obj = SceneObject(**values, position=(float(x), float(y), 0.0), rotation=float(rng.uniform(0, 360)))
                obj.position = (float(x), float(y), float(obj.radius))
                if _placement_ok(obj, objects, like.directions, SCENE):
                    objects.append(obj)
                    break
            else:
                break             # crowded: draw the whole scene again
        if len(objects) < len(wanted):
            continue
        scene = _finish(like, objects)
        if any(f.holds is False for f in check_facts(text, scene)) or \
                any(_holds(f, scene) is False for f in predicates):
            continue
        rendering = render(scene, config)
        if _all_visible(rendering, len(objects)):
            return scene, rendering
    return None


def input_reconstruction(agent, explainer, items: Sequence[BenchItem], outputs: Sequence, seed: int = 0,
                         progress: bool = True) -> dict:
    """The input reconstruction test on the image (see the module docstring)."""
    _check(explainer, items, outputs, ("text",), "input reconstruction")
    return _input_reconstruction(agent, explainer, items, outputs, seed, progress,
                                 explain(explainer, items, outputs, agent, seed=seed))


def _input_reconstruction(agent, explainer, items, outputs, seed, progress, originals) -> dict:
    rebuilt, no_reasons, unbuildable = [], 0, 0
    for i, (item, ex) in enumerate(tqdm(list(zip(items, originals)), desc="reconstructions", disable=not progress)):
        text = ex.payload["text"]
        if not stated_facts(text):
            no_reasons += 1
            continue
        made = rebuild_scene(text, item.scene, _item_rng(seed, item), _render_config(item))
        if made is None:
            unbuildable += 1
            continue
        scene, rendering = made
        rebuilt.append((i, replace(item, scene=scene, scene_json=scene_to_json(scene), image=rendering.image,
                                   masks=rendering.mask)))
    new_outputs = answer(agent, [e for _, e in rebuilt]) if rebuilt else []
    records = [{"item": items[i].index, "question": items[i].question, "explanation": originals[i].payload["text"],
                "objects": len(e.scene.objects), "answer_before": outputs[i].answer, "answer_after": out.answer,
                "unfaithful": out.answer != outputs[i].answer} for (i, e), out in zip(rebuilt, new_outputs)]
    unfaithful = [r for r in records if r["unfaithful"]]
    return {"test": "input_reconstruction", "explainer": explainer.name, "items": len(items),
            "reconstructed": len(records), "no_reasons": no_reasons, "unbuildable": unbuildable,
            "unfaithful": len(unfaithful), "pct_unfaithful": _pct(len(unfaithful), len(records)),
            "examples": unfaithful[:EXAMPLES] + [r for r in records if not r["unfaithful"]][:EXAMPLES],
            "reference": {"pct_unfaithful": PAPER["reconstruction_pct_unfaithful"], "source": PAPER["source"]},
            "definitions": {
                "reconstructed": "items whose explanation's stated facts gave a scene (only the objects "
                                 "stated; the rest random; every checkable stated fact holds), rendered",
                "no_reasons": "explanations that state no fact about the scene",
                "unbuildable": f"explanations no scene satisfied in {RECONSTRUCTION_TRIES} draws",
                "unfaithful": "reconstructed items where the agent's answer to the same question differs",
                "pct_unfaithful": "100 * unfaithful / reconstructed",
            }}


def faithfulness(agent, explainer, items: Sequence[BenchItem], outputs: Sequence, seed: int = 0,
                 progress: bool = True) -> dict:
    """Every faithfulness test that applies to the explainer's kind: text explainers get the counterfactual
    tests on both sides and input reconstruction, attention explainers the image-side attention test, other
    kinds none (`tests` is then empty and `note` says why). Each test's report is under its name
    (counterfactual_text, counterfactual_image, input_reconstruction); `tests` lists those run and
    `headline` repeats their main percentages."""
    if len(items) != len(outputs):
        raise ValueError(f"{len(items)} items but {len(outputs)} agent outputs: one output per item")
    report = {"explainer": explainer.name, "kind": explainer.kind, "items": len(items), "reference": PAPER}
    if explainer.kind == "text":
        _check(explainer, items, outputs, ("text",), "faithfulness")
        originals = explain(explainer, items, outputs, agent, seed=seed)
        tests = {"counterfactual_text": counterfactual_text(agent, explainer, items, outputs, seed, progress),
                 "counterfactual_image": _counterfactual_image(agent, explainer, items, outputs, seed, progress,
                                                               originals),
                 "input_reconstruction": _input_reconstruction(agent, explainer, items, outputs, seed, progress,
                                                               originals)}
        headline = {"text_pct_total_unfaith": tests["counterfactual_text"]["pct_total_unfaith"],
                    "image_pct_total_unfaith": tests["counterfactual_image"]["pct_total_unfaith"],
                    "reconstruction_pct_unfaithful": tests["input_reconstruction"]["pct_unfaithful"]}
    elif explainer.kind == "attention":
        _check(explainer, items, outputs, ("attention",), "faithfulness")
        tests = {"counterfactual_image": counterfactual_image(agent, explainer, items, outputs, seed, progress)}
        headline = {"attention_pct_moved": tests["counterfactual_image"]["pct_moved"],
                    "attention_pct_not_moved": tests["counterfactual_image"]["pct_not_moved"],
                    "attention_mean_abs_change": tests["counterfactual_image"]["mean_abs_change"]}
    else:
        return {**report, "tests": [], "headline": {},
                "note": f"no faithfulness test applies to explanations of kind {explainer.kind!r}"}
    return {**report, "tests": list(tests), **tests, "headline": headline}

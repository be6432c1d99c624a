"""The answer check: hand-written sentences per answer type, and its benchmark on a tiny world."""
import json
import subprocess
import sys

import pytest

from explainers.answer_check import AnswerCheck, check_answer, check_explanation


def says(program_end, answer, text, union=False):
    check = check_answer(program_end, answer, text, union)
    assert isinstance(check, AnswerCheck) and check.reason
    return check.states_answer, check.contradicts


@pytest.mark.parametrize("answer, text", [
    ("2", "There are a large brown rubber sphere and cylinder."),      # shared adjectives: two objects
    ("1", "There is the big cylinder."),
    ("3", "There are two red cubes and a red sphere that are left of the big ball."),
    ("3", "There are 3 cubes."),
    ("3", "There are a red cube, sphere and cylinder."),
    ("0", "There are no small cubes that are right of the small purple matte sphere."),
    ("0", "There is no red cube."),
    ("0", "No things have the same size as a large cube."),
    ("0", "There are no cylinder and cube."),                           # "no" shared by both
    ("1", "The red block has the identical color as a big matte cylinder."),
    ("3", "Two small matte balls and the small matte cylinder have the same size as a brown cylinder."),
    ("6", "There are a sphere, four cylinders and a block which are right of the big rubber sphere that is "
          "left of the tiny green rubber cylinder."),
    ("1", "There is a large ball that has the same size as a green block."),
    ("2", "There are a small red metallic cube and sphere."),                # CLEVR-X's own forms
    ("2", "There is a small red metallic cube and a large green rubber sphere."),
    ("3", "The three large spheres have the same size as a yellow rubber ball."),
    ("2", "The two cubes are red."),
    ("4", "There is a red cube. In addition, there are three spheres."),
])
def test_counts_are_the_objects_the_sentence_enumerates(answer, text):
    assert says("count", answer, text) == (True, False)
    wrong = str(int(answer) + 1)
    assert says("count", wrong, text) == (False, True)


def test_counts_of_a_union_allow_what_its_sides_may_share():
    text = "There are two cubes and there is a red cube."      # the red cube may be one of the cubes
    assert says("count", "2", text, union=True) == (True, False)
    assert says("count", "3", text, union=True) == (True, False)
    assert says("count", "4", text, union=True) == (False, True)
    assert says("count", "2", text) == (False, True)            # not a union: the sides add up
    disjoint = "There are two gray cubes and there is a green sphere."
    assert says("count", "2", disjoint, union=True) == (False, True)


def test_a_count_the_sentence_does_not_give_is_not_a_contradiction():
    assert says("count", "2", "The cube is red.") == (False, False)         # about a color: no count
    assert says("count", "2", "There are cubes.") == (False, False)        # a bare plural: any number
    assert says("exist", "yes", "It is.") == (False, False)
    assert says("count", "2", "") == (False, False)


@pytest.mark.parametrize("text", [
    "No things have the same size as the red cube.", "There are no red cubes.", "There is nothing left of the cube.",
    "The purple block is not left of the gray block.",
    "The purple block is on the right side of the gray block, not left of it.",
])
def test_no_must_say_there_is_none(text):
    assert says("exist", "no", text) == (True, False)
    assert says("exist", "yes", text) == (False, True)


@pytest.mark.parametrize("text", [
    "There is a red cube that is left of the ball.", "The metallic sphere is behind the large yellow metal cube.",
    "There are no red cubes left of the ball and there is a blue cube.",    # one side of a union is empty
    "Two metal balls have the same shape as a green ball.",
])
def test_yes_must_name_an_object(text):
    assert says("exist", "yes", text) == (True, False)
    assert says("exist", "no", text) == (False, True)


def test_a_queried_value_is_the_subjects_not_another_objects():
    text = "The cube left of the red sphere is blue."
    assert says("query_color", "blue", text) == (True, False)
    assert says("query_color", "red", text) == (False, True)         # blue is predicated of the subject
    there = "There is a green rubber cylinder on the left side of the red ball and the gray metallic cube."
    assert says("query_color", "green", there) == (True, False)
    assert says("query_color", "red", there) == (False, True)         # the subject is named green
    assert says("query_color", "red", "There is a small cylinder.") == (False, False)   # incomplete, not contrary
    assert says("query_color", "red", "The cube is not red.") == (False, True)
    assert says("query_color", "blue", "There is a blue cube which is behind the sphere that is red.") == (True, False)
    assert says("query_color", "blue", "The cube is blue and the sphere is red.") == (True, False)
    assert says("query_color", "blue", "There is a large cube. It is blue. The sphere is red.") == (True, False)
    assert says("query_color", "red", "There is a large cube. It is blue.") == (False, True)


@pytest.mark.parametrize("end, answer, text", [
    ("query_shape", "sphere", "The red thing is a ball."), ("query_shape", "cube", "There is a brown matte block."),
    ("query_material", "metal", "The ball is shiny."), ("query_material", "rubber", "There is a tiny matte sphere."),
    ("query_size", "small", "The rubber cylinder behind the large red sphere is tiny."),
    ("query_size", "large", "The large red cube has the same size as a sphere."),
])
def test_synonyms_state_the_value(end, answer, text):
    assert says(end, answer, text) == (True, False)


def test_the_most_common_value_is_the_one_counted_most():
    assert says("most_common", "sphere", "Most things are balls. There are three balls, a block and a cylinder.") \
        == (True, False)
    assert says("most_common", "cube", "There are three balls, a block and a cylinder.") == (False, True)
    assert says("most_common", "cube", "Most things are balls.") == (False, True)
    assert says("most_common", "cube", "There are a ball and a block.") == (False, False)   # a tie


@pytest.mark.parametrize("end, text, verdict", [
    ("equal_color", "The cube is red and the ball is blue.", "no"),
    ("equal_color", "The cube and sphere are red and red.", "yes"),
    ("equal_color", "The big metallic cylinder is red and the small shiny block behind the blue cylinder is red.",
     "yes"),
    ("equal_size", "There is a large cube and there is a small sphere.", "no"),
    ("equal_material", "There is a big blue metal block that is behind the small blue matte block and there is "
                       "a small cyan metal sphere that is right of the small metal cube.", "yes"),
    ("equal_shape", "The small thing on the right side of the blue cube is a cube and the big thing in front of "
                    "the big cube is a sphere.", "no"),
    ("equal_integer", "There are a cylinder and four cubes that are in front of the small red matte cylinder and "
                      "there are no spheres.", "no"),
    ("equal_integer", "There are no rubber things in front of the sphere and there are no things behind the block.",
     "yes"),
    ("greater_than", "There are two blocks and there is a cylinder.", "yes"),
    ("less_than", "There are two blocks and there is a cylinder.", "no"),
])
def test_comparisons_are_decided_from_the_stated_facts(end, text, verdict):
    other = {"yes": "no", "no": "yes"}[verdict]
    assert says(end, verdict, text) == (True, False)
    assert says(end, other, text) == (False, True)


def test_comparisons_the_sentence_cannot_decide_are_left_open():
    assert says("equal_color", "yes", "The cube is red.") == (None, False)
    assert says("greater_than", "yes", "There are two blocks.") == (None, False)
    assert says("equal_color", "yes", "") == (None, False)


def test_the_answer_type_comes_from_the_question_else_from_the_answer():
    cases = {("How many cubes are there?", "2"): "count", ("Is there a red cube?", "yes"): "exist",
             ("What color is the cube?", "red"): "query", ("What do you see?", "cube"): "query",
             ("Is the cube the same color as the sphere?", "no"): "compare",
             ("Are there more cubes than spheres?", "yes"): "compare_integer",
             ("Is the red cube left of the sphere?", "no"): "exist",
             ("zzz qqq?", "2"): "count", ("zzz qqq?", "red"): "query", ("zzz qqq?", "yes"): "unknown"}
    for (question, answer), kind in cases.items():
        assert check_explanation(question, answer, "There is a cube.").answer_type == kind, question
    unknown = check_explanation("zzz qqq?", "yes", "There is a cube.")
    assert unknown.states_answer is None and not unknown.contradicts
    union = "There is a red cube and there are two cubes."       # the red cube may be one of the two
    for answer, verdict in (("2", (True, False)), ("3", (True, False)), ("4", (False, True))):
        check = check_explanation("How many things are red things or cubes?", answer, union)
        assert (check.states_answer, check.contradicts) == verdict
    wrong_type = check_explanation("How many cubes are there?", "red", "There is a red cube.")
    assert wrong_type.states_answer is None and not wrong_type.contradicts


def test_the_check_runs_without_torch():
    code = "import sys, explainers.answer_check, experiments.benchmark.answer_check; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() \
        == "False"


def test_the_benchmark_on_a_tiny_world_meets_the_issues_targets(tiny_world, tmp_path, capsys):
    from experiments.benchmark.answer_check import load_questions, load_scenes, main, measure

    report = measure(load_questions(tiny_world, None), load_scenes(tiny_world), progress=False)
    overall = report["overall"]
    assert overall["references"] > 50 and overall["swapped"] > 50 and overall["edited"] > 20
    assert overall["false_alarm_rate"] <= 0.01 and overall["miss_rate"] <= 0.05
    assert {"count", "exist", "query"} <= set(report["by_type"])
    out = tmp_path / "answer_check.json"
    main(["--world", str(tiny_world), "--max-items", "30", "--json", str(out)])
    saved = json.loads(out.read_text())
    assert saved["overall"]["questions"] == 30 and "false alarms" in capsys.readouterr().out


def test_the_benchmark_reads_clevrx_explanations_of_clevr_files(tiny_world, tmp_path, capsys):
    """The CLEVR-X mode: a CLEVR-format scenes and questions file (here the tiny world's, written by clevr_io)
    and an explanations file keyed by question_index, as `clevrx_references --clevrx-output` saves CLEVR-X's."""
    from experiments.benchmark.answer_check import main
    from vqa_agent.world import clevr_io

    questions = json.loads((tiny_world / "questions.json").read_text())["questions"][:40]
    scenes, asked = tmp_path / "scenes.json", tmp_path / "questions.json"
    scenes.write_text((tiny_world / "scenes.json").read_text())
    asked.write_text(json.dumps({"info": {}, "questions": [{k: v for k, v in q.items() if k != "explanations"}
                                                           for q in questions]}))
    explained = {str(q["question_index"]): q["explanations"][:3] for q in questions[:30]}
    explanations = tmp_path / "clevrx.json"
    explanations.write_text(json.dumps(explained))
    out = tmp_path / "report.json"
    main(["--clevr-scenes", str(scenes), "--clevr-questions", str(asked), "--clevrx-explanations", str(explanations),
          "--json", str(out)])
    report = json.loads(out.read_text())
    assert report["overall"]["questions"] == 30 and report["references"].startswith("CLEVR-X")
    assert report["overall"]["false_alarm_rate"] <= 0.01 and report["overall"]["miss_rate"] <= 0.05
    assert len(clevr_io.load_questions(asked)) == 40 and "CLEVR-X" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--world", str(tiny_world), "--clevr-scenes", str(scenes)])

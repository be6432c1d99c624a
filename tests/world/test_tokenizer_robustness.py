"""Reading questions the way players type them: typos, plurals, case and filler are read onto the
vocabulary; words outside the world are named in an honest refusal instead of a confident answer.
Vocabularies are built from a handful of hand-written questions: no trained model is needed."""
import numpy as np
import pytest

from vqa_agent.tokenizer import (ENGLISH_ONLY, WORLD_SCOPE, QuestionError, Vocabulary, edit_distance, normalize,
                                 outside_world_message)

PLAYER_QUESTIONS = [
    "is there a red cube?", "how many cubes are there?", "how many spheres are there in the image?",
    "what color is the large cylinder?", "how many cylinders can you see?", "is there a purple metal sphere?",
    "can you see a small rubber thing?", "what shape is the object behind the cube?",
    "what size is the green ball?", "is the cube the same color as the sphere?",
]
CLEVR_QUESTIONS = [
    "There is a large cube; what is its color?", "How many other things are the same size as the red ball?",
    "Are there any other things that have the same color as the tiny metal cylinder?",
    "Is there anything else that is made of the same material as the cube?",
]


@pytest.fixture(scope="module")
def vocabulary():
    return Vocabulary.build(PLAYER_QUESTIONS + CLEVR_QUESTIONS, ["yes", "no", "2", "red"])


def refusal(vocabulary, question) -> str:
    with pytest.raises(QuestionError) as raised:
        vocabulary.check(question)
    return str(raised.value)


@pytest.mark.parametrize("question", PLAYER_QUESTIONS + CLEVR_QUESTIONS)
def test_the_worlds_own_questions_read_as_typed_and_pass(vocabulary, question):
    vocabulary.check(question)
    assert vocabulary.read(question) == normalize(question)
    assert vocabulary.corrections(question) == {} and vocabulary.outside_words(question) == []
    assert 1 not in vocabulary.encode(question, 50)


@pytest.mark.parametrize("typed,meant", [
    ("is there a cyllinder?", "is there a cylinder?"),            # a letter too many
    ("what color is the spehre?", "what color is the sphere?"),    # two letters swapped
    ("is there a purpel cube?", "is there a purple cube?"),
    ("how many cilynders can you see?", "how many cylinders can you see?"),
    ("what is the materail of the cube?", "what is the material of the cube?"),
])
def test_typos_close_to_one_known_word_are_corrected(vocabulary, typed, meant):
    assert vocabulary.read(typed) == normalize(meant)
    assert vocabulary.encode(typed, 20) == vocabulary.encode(meant, 20)
    vocabulary.check(typed)


def test_typos_too_close_to_call_or_in_short_words_are_not_corrected(vocabulary):
    # "cubez" is one edit from both "cube" and "cubes": not guessed, but both are offered
    assert "cubez" in vocabulary.read("is there a cubez")
    message = refusal(vocabulary, "is there a cubez")
    assert "'cubez' (did you mean 'cube' or 'cubes'?)" in message
    # three letters: "rde" is one swap from "red", yet too many short words are one edit from another
    assert vocabulary.read("is there a rde cube") == ["is", "there", "a", "rde", "cube"]
    assert "'rde'" in refusal(vocabulary, "is there a rde cube")


def test_edit_distance_counts_a_swap_as_one_edit():
    assert edit_distance("spehre", "sphere") == 1
    assert edit_distance("cyllinder", "cylinder") == 1
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance("", "cube") == 4 and edit_distance("cube", "cube") == 0


def test_plurals_and_singulars_read_as_the_form_the_vocabulary_knows():
    vocabulary = Vocabulary.build(["is there a cube?", "how many spheres are there?"], ["yes"])
    assert vocabulary.read("how many cubes are there") == ["how", "many", "cube", "are", "there"]
    assert vocabulary.read("is there a sphere") == ["is", "there", "a", "spheres"]
    # synonyms too, and a synonym's other number: boxes -> box -> cube
    assert vocabulary.read("how many boxes are there") == ["how", "many", "cube", "are", "there"]
    assert vocabulary.read("is there a ball") == ["is", "there", "a", "spheres"]
    # glue keeps its own form: "its" is not the plural of "it"
    assert Vocabulary.build(["is it a cube?"], ["yes"]).read("its cube") == ["its", "cube"]


def test_case_and_punctuation_change_nothing(vocabulary):
    assert vocabulary.encode("IS THERE A RED CUBE???", 20) == vocabulary.encode("is there a red cube", 20)
    assert vocabulary.encode("What's the colour of the grey ball?!", 20) == \
        vocabulary.encode("what is the color of the gray ball", 20)


@pytest.mark.parametrize("typed,plain", [
    ("Please, can you tell me how many cubes are there?", "how many cubes are there"),
    ("Hey, could you please tell me if there is a red cube? Thanks!", "there is a red cube"),
    ("ok so um what color is the large cylinder, thank you", "what color is the large cylinder"),
    ("I want to know whether the cube is the same color as the sphere", "the cube is the same color as the sphere"),
])
def test_filler_is_dropped_before_encoding(vocabulary, typed, plain):
    assert vocabulary.read(typed) == normalize(plain)
    assert vocabulary.encode(typed, 20) == vocabulary.encode(plain, 20)
    vocabulary.check(typed)


def test_filler_the_vocabulary_knows_is_kept():
    # "can you see" is a phrasing of the world, not "can you tell me"
    assert Vocabulary.build(PLAYER_QUESTIONS, ["yes"]).read("can you see a cube")[:3] == ["can", "you", "see"]
    # a world whose own phrasing says "tell me" keeps it
    world = Vocabulary.build(["tell me the color of the cube", "is there a cube"], ["red"])
    assert world.read("tell me the color of the cube") == normalize("tell me the color of the cube")


@pytest.mark.parametrize("question,named", [
    ("is there a dog?", "'dog'"), ("is there a red unicorn", "'unicorn'"),
    ("is there a dog or a cat?", "'dog' and 'cat'"), ("is the cube above the sphere?", "'above'"),
])
def test_words_outside_the_world_are_named_in_the_refusal(vocabulary, question, named):
    message = refusal(vocabulary, question)
    assert f"I don't know the word{'s' if ' and ' in named else ''} {named}." in message
    assert message.endswith(WORLD_SCOPE) and message != ENGLISH_ONLY
    assert message == outside_world_message(vocabulary.outside_words(question))


def test_english_glue_the_vocabulary_lacks_is_not_outside_the_world():
    """An agent trained on player phrasings still takes CLEVR's "its", "other", "any", "have" (as <unk>)."""
    vocabulary = Vocabulary.build(PLAYER_QUESTIONS, ["yes"])
    for question in ("There is a large cube; what is its color?",
                     "Are there any other things that have the same color as the small metal cylinder?"):
        vocabulary.check(question)
        assert vocabulary.outside_words(question) == []
        assert 1 in vocabulary.encode(question, 50)


def test_words_of_held_out_phrasings_are_the_worlds_not_typos():
    training = ["what size is the cube?", "is there a cube?"]
    held_out = "what sized cube is there?"
    trained_only = Vocabulary.build(training, ["large"])
    assert trained_only.read(held_out)[1] == "size"          # a typo of "size", as far as it knows
    whole_world = Vocabulary.build(training, ["large"], world_questions=training + [held_out])
    assert whole_world.world_words == ["sized"]
    assert whole_world.read(held_out)[1] == "sized" and whole_world.encode(held_out, 10)[1] == 1
    whole_world.check(held_out)
    copy = Vocabulary.from_dict(whole_world.to_dict())
    assert copy.world_words == ["sized"] and copy.read(held_out) == whole_world.read(held_out)
    older_file = {"words": whole_world.words, "answers": whole_world.answers}   # before world_words existed
    assert Vocabulary.from_dict(older_file).world_words == []


def test_the_question_generators_questions_all_pass():
    """Questions the world itself generates pass check, held-out phrasings included, with a vocabulary
    built as training builds it (training questions, the whole world's words)."""
    from vqa_agent.world.questions import QuestionGenerator
    from vqa_agent.world.scene import generate_scene

    rng = np.random.default_rng(11)
    generator = QuestionGenerator()
    scenes = [generate_scene(rng, index=i) for i in range(40)]
    train = [q.question for s in scenes[:20] for q in generator.for_scene(s, 10, rng, allow_heldout=False)]
    other = [q.question for s in scenes[20:] for q in generator.for_scene(s, 10, rng)]
    vocabulary = Vocabulary.build(train, ["yes"], world_questions=train + other)
    for question in train + other:
        vocabulary.check(question)
    assert all(vocabulary.read(q) == normalize(q) for q in train)


@pytest.mark.parametrize("question", ["есть ли красный куб?", "红色立方体?", "is there a красный cube?",
                                      "xyzzy plugh", "???", "", "thank you", "please"])
def test_questions_it_cannot_read_at_all_keep_the_english_only_message(vocabulary, question):
    assert refusal(vocabulary, question) == ENGLISH_ONLY


@pytest.mark.parametrize("question", [None, 42])
def test_a_question_that_is_not_text_is_refused(vocabulary, question):
    with pytest.raises(QuestionError, match="must be text"):
        vocabulary.check(question)


@pytest.mark.parametrize("question", ["zq", "q", "is there a zq", "a a a", "qq-qq? 3", "x" * 40, "please", "'s"])
def test_short_garbage_never_crashes(vocabulary, question):
    encoded = vocabulary.encode(question, 10)
    assert encoded and all(isinstance(i, int) and 0 < i < len(vocabulary.words) for i in encoded)
    try:
        vocabulary.check(question)
    except QuestionError as error:
        assert str(error)
    if question == "is there a zq":
        assert "'zq'" in refusal(vocabulary, question)

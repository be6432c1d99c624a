"""How much of what players type does the question parser understand, and does it ever misread?

    python -m experiments.benchmark.parser_coverage [--scenes 200] [--seed 0] [--json OUT]

Three numbers, each on its own data:
1. Round trip: generated questions (every family, random phrasings) parsed back must give the
   generator's own program (compared by programs.program_key; same answer on the scene as a fallback).
   Target 100%.
2. Held-out phrasings: questions written the way players write them, never the way the generator does,
   each paired with the tree it means. Reported: % parsed, % parsed correctly, and the number parsed
   into a different program, which must be 0 (a misread question would be graded wrongly).
3. Rejection: questions outside the language must all be rejected (ungradable, never guessed).
"""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter

import numpy as np

from vqa_agent.world.parser import VALUE_ATTRIBUTE, AttributeCheck, Unparseable, parse
from vqa_agent.world.programs import IllPosed, execute, program_key
from vqa_agent.world.questions import NounPhrase, Question, QuestionGenerator
from vqa_agent.world.scene import generate_scene


# --- a compact way to write the intended trees ------------------------------------------------------

def o(*values: str, same: tuple[str, NounPhrase] | None = None, **relations: NounPhrase) -> NounPhrase:
    """A noun phrase from attribute values and relations: o("red", "cube", left=o("sphere"))."""
    return NounPhrase({VALUE_ATTRIBUTE[v]: v for v in values}, list(relations.items()), same)


def exist(p): return Question("exist", [p])
def count(p): return Question("count", [p])
def count_or(a, b, *outer): return Question("count_or", [a, b], outer={VALUE_ATTRIBUTE[v]: v for v in outer})
def query(attr, p): return Question("query", [p], attr=attr)
def compare(op, a, b): return Question("compare_count", [a, b], op=op)
def same_attr(attr, a, b): return Question("compare_attr", [a, b], attr=attr)
def relation(op, a, b): return Question("relation_check", [a, b], op=op)
def most(attr="shape", p=None): return Question("most_common", [p or NounPhrase()], attr=attr)
def check(p, *values): return AttributeCheck(p, {VALUE_ATTRIBUTE[v]: v for v in values})


CUBE, BALL, CYL = o("cube"), o("sphere"), o("cylinder")

# Player phrasings the generator never emits, with the question each one means.
HELD_OUT: list[tuple[str, object]] = [
    # exist
    ("is there any red cube", exist(o("red", "cube"))),
    ("are there red cubes", exist(o("red", "cube"))),
    ("do you see any balls", exist(BALL)),
    ("can you see a cylinder", exist(CYL)),
    ("does the image contain a green sphere", exist(o("green", "sphere"))),
    ("is there a red cube in the image", exist(o("red", "cube"))),
    ("Is there a red cube in the picture?", exist(o("red", "cube"))),
    ("any cylinders?", exist(CYL)),
    ("Is there at least one metallic ball?", exist(o("metal", "sphere"))),
    ("are there any grey cubes", exist(o("gray", "cube"))),
    ("Is there anything red?", exist(o("red"))),
    ("is anything made of metal", exist(o("metal"))),
    ("is there something shiny", exist(o("metal"))),
    ("do you see anything yellow", exist(o("yellow"))),
    ("Does the picture have any tiny boxes?", exist(o("small", "cube"))),
    ("does this scene show a purple item", exist(o("purple"))),
    ("are any of the cylinders matte", exist(o("rubber", "cylinder"))),
    ("is any ball brown", exist(o("brown", "sphere"))),
    ("is there a cube to the left of the blue ball", exist(o("cube", left=o("blue", "sphere")))),
    ("are there things behind the large cylinder", exist(o(behind=o("large", "cylinder")))),
    ("is anything in front of the cube", exist(o(front=CUBE))),
    ("Is there a cube that is red?", exist(o("red", "cube"))),
    ("are there any things made of rubber", exist(o("rubber"))),
    ("is there another sphere that is the same size as the red cube",
     exist(o("sphere", same=("size", o("red", "cube"))))),
    ("are there other objects with the same color as the small ball",
     exist(o(same=("color", o("small", "sphere"))))),
    ("can you see any objects that are on the right of the cyan cylinder", exist(o(right=o("cyan", "cylinder")))),
    ("do any rubbery blocks exist", exist(o("rubber", "cube"))),
    ("is a large ball visible", exist(o("large", "sphere"))),
    ("is there a little cube", exist(o("small", "cube"))),
    ("are there any big things that are both left of the cube and behind the ball",
     exist(o("large", left=CUBE, behind=BALL))),
    ("is there a red metal cube left of the ball and in front of the cylinder",
     exist(o("red", "metal", "cube", left=BALL, front=CYL))),
    ("do you see a ball?", exist(BALL)),
    ("do any other things have the same shape as the red cylinder",
     exist(o(same=("shape", o("red", "cylinder"))))),
    ("is there a blue cilinder", exist(o("blue", "cylinder"))),
    ("Is something behind the yellow thing?", exist(o(behind=o("yellow")))),
    ("is there a red one", exist(o("red"))),
    # count
    ("how many spheres", count(BALL)),
    ("how many spheres do you see", count(BALL)),
    ("count the red things", count(o("red"))),
    ("number of cubes?", count(CUBE)),
    ("How many objects are there in the picture?", count(o())),
    ("how many big metal things", count(o("large", "metal"))),
    ("what is the number of yellow balls", count(o("yellow", "sphere"))),
    ("the number of cylinders", count(CYL)),
    ("count all the blocks", count(CUBE)),
    ("how many cubes are red", count(o("red", "cube"))),
    ("how many of the balls are shiny", count(o("metal", "sphere"))),
    ("how many things are left of the gray sphere", count(o(left=o("gray", "sphere")))),
    ("how many cubes are behind the large cylinder", count(o("cube", behind=o("large", "cylinder")))),
    ("how many other things are the same color as the cube", count(o(same=("color", CUBE)))),
    ("how many things have the same shape as the red thing", count(o(same=("shape", o("red"))))),
    ("how many rubber objects can you see", count(o("rubber"))),
    ("How many tiny cylinders are in this image?", count(o("small", "cylinder"))),
    ("how many balls are there?", count(BALL)),
    ("How many things are made of metal?", count(o("metal"))),
    ("how many large objects are in front of the purple cube", count(o("large", front=o("purple", "cube")))),
    ("how many cubes exist", count(CUBE)),
    ("how many things are the same size as the green cylinder", count(o(same=("size", o("green", "cylinder"))))),
    ("count the things to the right of the red ball", count(o(right=o("red", "sphere")))),
    ("how many brown objects are visible", count(o("brown"))),
    ("how many cubes are big and shiny", count(o("large", "metal", "cube"))),
    ("how many spheres that are matte are there", count(o("rubber", "sphere"))),
    ("how many of the red things are cubes", count(o("red", "cube"))),
    ("how many items", count(o())),
    ("how many little ones are there", count(o("small"))),
    ("how many cubes are there in the image", count(CUBE)),
    # count_or
    ("how many things are red or blue", count_or(o("red"), o("blue"))),
    # CLEVR's convention: a clause after the last noun describes that noun
    ("are there more cubes than balls left of the cylinder", compare("more", CUBE, o("sphere", left=CYL))),
    ("how many things are the same color as the cube left of the ball",
     count(o(same=("color", o("cube", left=BALL))))),
    ("how many red or blue cubes", count_or(o("red", "cube"), o("blue", "cube"))),
    ("how many cubes are red or blue", count_or(o("red"), o("blue"), "cube")),
    ("how many cubes or spheres", count_or(CUBE, BALL)),
    ("count the cylinders or balls", count_or(CYL, BALL)),
    ("how many objects are either metal or yellow", count_or(o("metal"), o("yellow"))),
    ("How many things are big cubes or small spheres?", count_or(o("large", "cube"), o("small", "sphere"))),
    ("how many metal or rubber spheres are there", count_or(o("metal", "sphere"), o("rubber", "sphere"))),
    ("how many spheres are large or shiny", count_or(o("large"), o("metal"), "sphere")),
    ("what number of blocks or cylinders are in the image", count_or(CUBE, CYL)),
    ("how many gray things or cylinders do you see", count_or(o("gray"), CYL)),
    # compare_count
    ("are there more cubes than spheres", compare("more", CUBE, BALL)),
    ("are there fewer balls than blocks", compare("fewer", BALL, CUBE)),
    ("are there as many cubes as spheres", compare("equal", CUBE, BALL)),
    ("are there less cylinders than cubes", compare("fewer", CYL, CUBE)),
    ("do cubes outnumber spheres", compare("more", CUBE, BALL)),
    ("is the number of red things bigger than the number of blue things", compare("more", o("red"), o("blue"))),
    ("is the number of metal things equal to the number of rubber things",
     compare("equal", o("metal"), o("rubber"))),
    ("is the number of cubes smaller than that of balls", compare("fewer", CUBE, BALL)),
    ("are there more big things than small things", compare("more", o("large"), o("small"))),
    ("is there the same number of cylinders and cubes", compare("equal", CYL, CUBE)),
    ("are there equally many red cubes and blue spheres",
     compare("equal", o("red", "cube"), o("blue", "sphere"))),
    ("are there more shiny objects than there are matte objects", compare("more", o("metal"), o("rubber"))),
    ("are there fewer cubes left of the ball than spheres", compare("fewer", o("cube", left=BALL), BALL)),
    ("is the number of spheres lower than the number of cubes", compare("fewer", BALL, CUBE)),
    ("Are there more red ones than green ones?", compare("more", o("red"), o("green"))),
    # query
    ("what color is the big cylinder", query("color", o("large", "cylinder"))),
    ("what's the color of the big cylinder", query("color", o("large", "cylinder"))),
    ("which color is the ball", query("color", BALL)),
    ("what is the cube made of", query("material", CUBE)),
    ("is the cube metal or rubber", query("material", CUBE)),
    ("what size is the ball", query("size", BALL)),
    ("is the ball big or small", query("size", BALL)),
    ("what shape is the red thing", query("shape", o("red"))),
    ("What colour is the cube?", query("color", CUBE)),
    ("what color does the small cylinder have", query("color", o("small", "cylinder"))),
    ("which material is the yellow ball made of", query("material", o("yellow", "sphere"))),
    ("what material is the red cube", query("material", o("red", "cube"))),
    ("is the cylinder rubber or metal", query("material", CYL)),
    ("is the red ball large or small", query("size", o("red", "sphere"))),
    ("is the blue thing small or big", query("size", o("blue"))),
    ("is the green thing a cube, a sphere or a cylinder?", query("shape", o("green"))),
    ("what is the big cylinder's color", query("color", o("large", "cylinder"))),
    ("what's the small ball's material", query("material", o("small", "sphere"))),
    ("the color of the tiny cube?", query("color", o("small", "cube"))),
    ("how large is the metal cylinder", query("size", o("metal", "cylinder"))),
    ("what kind of object is the purple thing", query("shape", o("purple"))),
    ("what type of shape is the brown object", query("shape", o("brown"))),
    ("what is the red thing", query("shape", o("red"))),
    ("what is behind the green cylinder", query("shape", o(behind=o("green", "cylinder")))),
    ("what is to the left of the yellow cube", query("shape", o(left=o("yellow", "cube")))),
    ("what color is the ball in front of the cube", query("color", o("sphere", front=CUBE))),
    ("what color is the thing that is left of the red cube", query("color", o(left=o("red", "cube")))),
    ("what shape is the object which is behind the small ball", query("shape", o(behind=o("small", "sphere")))),
    ("What is the material of the cylinder to the right of the blue sphere?",
     query("material", o("cylinder", right=o("blue", "sphere")))),
    ("what color is the sphere that is the same size as the cube",
     query("color", o("sphere", same=("size", CUBE)))),
    ("what is the shape of the thing that has the same color as the cyan cube",
     query("shape", o(same=("color", o("cyan", "cube"))))),
    ("what size is the cube which is both behind the ball and left of the cylinder",
     query("size", o("cube", behind=BALL, left=CYL))),
    ("is the cube made of metal or rubber", query("material", CUBE)),
    ("what color is the cube in the image", query("color", CUBE)),
    ("what is the color of the object on the left side of the gray cube",
     query("color", o(left=o("gray", "cube")))),
    ("what shape does the blue object have", query("shape", o("blue"))),
    ("which shape is the metallic thing", query("shape", o("metal"))),
    ("what material is the large cube made out of", query("material", o("large", "cube"))),
    ("what is the one in front of the cylinder", query("shape", o(front=CYL))),
    # relation_check
    ("is the cube left of the ball", relation("left", CUBE, BALL)),
    ("is the cube to the right of the sphere", relation("right", CUBE, BALL)),
    ("is the cube in front of the ball", relation("front", CUBE, BALL)),
    ("is the red sphere behind the blue cube", relation("behind", o("red", "sphere"), o("blue", "cube"))),
    ("is the cylinder on the left side of the small cube", relation("left", CYL, o("small", "cube"))),
    ("is the big thing on the right of the matte ball", relation("right", o("large"), o("rubber", "sphere"))),
    ("Is the shiny block in front of the yellow cylinder?", relation("front", o("metal", "cube"), o("yellow", "cylinder"))),
    ("is the red one left of the green one", relation("left", o("red"), o("green"))),
    ("is the ball infront of the cylinder", relation("front", BALL, CYL)),
    # compare_attr
    ("is the red thing the same color as the ball", same_attr("color", o("red"), BALL)),
    ("are the cube and the ball the same color", same_attr("color", CUBE, BALL)),
    ("do the cube and the cylinder have the same size", same_attr("size", CUBE, CYL)),
    ("is the ball made of the same material as the cube", same_attr("material", BALL, CUBE)),
    ("does the small cube have the same shape as the red thing", same_attr("shape", o("small", "cube"), o("red"))),
    ("is the color of the cube the same as the color of the ball", same_attr("color", CUBE, BALL)),
    ("is the size of the cylinder the same as that of the cube", same_attr("size", CYL, CUBE)),
    ("are the red cube and the blue ball made of the same material",
     same_attr("material", o("red", "cube"), o("blue", "sphere"))),
    ("is the big ball of the same color as the cylinder", same_attr("color", o("large", "sphere"), CYL)),
    ("do the cube and the sphere share the same color", same_attr("color", CUBE, BALL)),
    ("are the sphere and the cylinder of the same size", same_attr("size", BALL, CYL)),
    ("is the cube's color the same as the ball's color", same_attr("color", CUBE, BALL)),
    # attribute checks
    ("is the cube red", check(CUBE, "red")),
    ("is the cube metal", check(CUBE, "metal")),
    ("is the red thing a cube", check(o("red"), "cube")),
    ("is the ball big", check(BALL, "large")),
    ("is the cylinder made of rubber", check(CYL, "rubber")),
    ("is the sphere small and shiny", check(BALL, "small", "metal")),
    ("is the color of the cube red", check(CUBE, "red")),
    ("is the cube's material metal", check(CUBE, "metal")),
    ("is the thing left of the ball a big cylinder", check(o(left=BALL), "large", "cylinder")),
    ("is the blue object matte", check(o("blue"), "rubber")),
    ("is the tiny cube grey", check(o("small", "cube"), "gray")),
    ("Is the big red thing a ball?", check(o("large", "red"), "sphere")),
    ("is the cylinder behind the cube green", check(o("cylinder", behind=CUBE), "green")),
    # most_common
    ("what is in the image", most()),
    ("what do you see", most()),
    ("what's in the picture", most()),
    ("what objects are there", most()),
    ("what can you see", most()),
    ("what is there", most()),
    ("what things are in the image", most()),
    ("what kinds of objects do you see", most()),
    ("what does the image show", most()),
    ("what color are most of the things", most("color")),
    ("what is the most common color", most("color")),
    ("which shape is most common", most()),
    ("what color are most cubes", most("color", CUBE)),
    ("what material do most of the objects have", most("material")),
    ("what size are most things", most("size")),
    ("what shape are most of the red things", most("shape", o("red"))),
    # robustness: case, spacing, punctuation, contractions, spelling
    ("IS THERE A RED CUBE?", exist(o("red", "cube"))),
    ("how   many   spheres ??", count(BALL)),
    ("What's the colour of the big cylinder!", query("color", o("large", "cylinder"))),
    ("is there a red cube", exist(o("red", "cube"))),
    ("whats in the picture", most()),
    ("How many spheres?!", count(BALL)),
    ("is the cube\u2019s color red", check(CUBE, "red")),
    ("  what shape is the gray   object ...  ", query("shape", o("gray"))),
    ("Is the cube left-of the ball?", relation("left", CUBE, BALL)),
    # a second batch, written before running it through the parser (its misses are real misses)
    ("Is there a ball on the left of the red cube?", exist(o("sphere", left=o("red", "cube")))),
    ("How many blocks can I see?", count(CUBE)),
    ("What colour is the shiny ball?", query("color", o("metal", "sphere"))),
    ("Are there any spheres made of rubber?", exist(o("rubber", "sphere"))),
    ("How many cylinders are there in total?", count(CYL)),
    ("Is the large sphere made of metal?", check(o("large", "sphere"), "metal")),
    ("What material is the thing to the right of the cube made of?", query("material", o(right=CUBE))),
    ("Is the small cylinder to the left of the big ball?", relation("left", o("small", "cylinder"), o("large", "sphere"))),
    ("Are there more metal objects than rubber ones?", compare("more", o("metal"), o("rubber"))),
    ("Do you see any tiny yellow things?", exist(o("small", "yellow"))),
    ("What is the shape of the object behind the red cylinder?", query("shape", o(behind=o("red", "cylinder")))),
    ("How many things are in front of the blue cube?", count(o(front=o("blue", "cube")))),
    ("Is the purple object large?", check(o("purple"), "large")),
    ("Which shape does the green object have?", query("shape", o("green"))),
    ("Is there a matte cylinder behind the metal sphere?", exist(o("rubber", "cylinder", behind=o("metal", "sphere")))),
    ("Is the brown block the same size as the cyan sphere?", same_attr("size", o("brown", "cube"), o("cyan", "sphere"))),
    ("How many things are either cubes or cylinders?", count_or(CUBE, CYL)),
    ("Are there as many balls as cylinders?", compare("equal", BALL, CYL)),
    ("what's behind the red ball?", query("shape", o(behind=o("red", "sphere")))),
    ("What color is the object in front of the yellow cylinder?", query("color", o(front=o("yellow", "cylinder")))),
    ("Is anything behind the big cube?", exist(o(behind=o("large", "cube")))),
    ("how many matte spheres are there?", count(o("rubber", "sphere"))),
    ("Is the metallic cylinder small or large?", query("size", o("metal", "cylinder"))),
    ("Is the cyan thing a sphere?", check(o("cyan"), "sphere")),
    ("Are there any blue things to the right of the sphere?", exist(o("blue", right=BALL))),
    ("what is the material of the green ball", query("material", o("green", "sphere"))),
    ("How many objects are shiny?", count(o("metal"))),
    ("Are there fewer spheres than cylinders in the picture?", compare("fewer", BALL, CYL)),
    ("What's the size of the brown cube?", query("size", o("brown", "cube"))),
    ("Is the gray thing rubber?", check(o("gray"), "rubber")),
    ("Does the scene contain any cylinders?", exist(CYL)),
    ("Can you see anything green?", exist(o("green"))),
    ("What kind of object is to the left of the blue ball?", query("shape", o(left=o("blue", "sphere")))),
    ("Is the ball that is left of the cube red?", check(o("sphere", left=CUBE), "red")),
    ("How many red objects are to the left of the cylinder?", count(o("red", left=CYL))),
    ("Do the big sphere and the small cube have the same material?",
     same_attr("material", o("large", "sphere"), o("small", "cube"))),
    ("Is the number of balls equal to the number of cubes?", compare("equal", BALL, CUBE)),
    ("What color is the large rubber thing?", query("color", o("large", "rubber"))),
    ("Is there a yellow object?", exist(o("yellow"))),
    ("How many gray or brown objects are there?", count_or(o("gray"), o("brown"))),
    ("Is the small metal thing a cylinder?", check(o("small", "metal"), "cylinder")),
    ("what size is the thing that is the same color as the cube", query("size", o(same=("color", CUBE)))),
    ("Are there more cylinders than blocks?", compare("more", CYL, CUBE)),
    ("What's the shape of the big metal object?", query("shape", o("large", "metal"))),
    ("how many cubes do you see in the image?", count(CUBE)),
    ("Is there a large green cylinder in the picture?", exist(o("large", "green", "cylinder"))),
    ("tell me the color of the cube", query("color", CUBE)),
    ("How many things have the same material as the blue cube?", count(o(same=("material", o("blue", "cube"))))),
    ("Are there other things of the same shape as the cylinder?", exist(o(same=("shape", CYL)))),
    ("Is the big cube made out of rubber?", check(o("large", "cube"), "rubber")),
    ("What is the colour of the metallic cylinder?", query("color", o("metal", "cylinder"))),
    ("is there any ball behind the green thing", exist(o("sphere", behind=o("green")))),
    ("how many balls are in front of the cube?", count(o("sphere", front=CUBE))),
    ("Is the blue sphere the same material as the red cylinder?",
     same_attr("material", o("blue", "sphere"), o("red", "cylinder"))),
    ("what number of objects are metal", count(o("metal"))),
    ("Could you tell me how many cubes there are?", count(CUBE)),
    ("Is the small ball metallic or matte?", query("material", o("small", "sphere"))),
    ("What is the color of the ball left of the yellow cube?", query("color", o("sphere", left=o("yellow", "cube")))),
    # a third batch, also written before running it
    ("Is there a small brown metal sphere?", exist(o("small", "brown", "metal", "sphere"))),
    ("How many large things are behind the small cylinder?", count(o("large", behind=o("small", "cylinder")))),
    ("What colour is the block?", query("color", CUBE)),
    ("Is the rubber cube yellow?", check(o("rubber", "cube"), "yellow")),
    ("Are there any metallic cylinders in the scene?", exist(o("metal", "cylinder"))),
    ("do you see something purple", exist(o("purple"))),
    ("Is the sphere behind the cylinder metal?", check(o("sphere", behind=CYL), "metal")),
    ("what shape is the thing in front of the big red sphere", query("shape", o(front=o("large", "red", "sphere")))),
    ("Which material is the brown thing made of?", query("material", o("brown"))),
    ("are there more spheres than cubes in the image", compare("more", BALL, CUBE)),
    ("how many cyan objects?", count(o("cyan"))),
    ("Is there a cylinder right of the gray cube?", exist(o("cylinder", right=o("gray", "cube")))),
    ("What's the material of the tiny ball?", query("material", o("small", "sphere"))),
    ("Is the yellow thing in front of the purple thing?", relation("front", o("yellow"), o("purple"))),
    ("How many spheres are metal?", count(o("metal", "sphere"))),
    ("Are the sphere and the cube the same size?", same_attr("size", BALL, CUBE)),
    ("Does the large cylinder have the same color as the small sphere?",
     same_attr("color", o("large", "cylinder"), o("small", "sphere"))),
    ("Is the cube blue or red or green or yellow or gray or brown or purple or cyan?", query("color", CUBE)),
    ("How many balls are behind the cube?", count(o("sphere", behind=CUBE))),
    ("what do you see in the picture?", most()),
    ("Is the shiny thing a cube or a ball or a cylinder?", query("shape", o("metal"))),
    ("Are any spheres green?", exist(o("green", "sphere"))),
    ("How many objects are big?", count(o("large"))),
    ("Is the big red cube metallic?", check(o("large", "red", "cube"), "metal")),
    ("What's the color of the thing on the right side of the cylinder?", query("color", o(right=CYL))),
    ("Can you see any other cubes with the same material as the sphere?", exist(o("cube", same=("material", BALL)))),
    ("Is there a grey ball?", exist(o("gray", "sphere"))),
    ("how many yellow or green things are there", count_or(o("yellow"), o("green"))),
    ("What number of cylinders are shiny?", count(o("metal", "cylinder"))),
    ("Is the color of the big ball the same as the color of the small cube?",
     same_attr("color", o("large", "sphere"), o("small", "cube"))),
    ("Is there a thing that is both left of the ball and in front of the cube?", exist(o(left=BALL, front=CUBE))),
    ("What size is the cylinder left of the red sphere?", query("size", o("cylinder", left=o("red", "sphere")))),
    ("Are there fewer metal cubes than rubber cubes?", compare("fewer", o("metal", "cube"), o("rubber", "cube"))),
    ("Is the green cylinder behind the gray sphere?", relation("behind", o("green", "cylinder"), o("gray", "sphere"))),
    ("What is the most common shape?", most()),
    ("Which color do most objects have?", most("color")),
    ("what objects do you see", most()),
    ("Do the red ball and the blue cube have the same size?", same_attr("size", o("red", "sphere"), o("blue", "cube"))),
    ("How many small things are made of rubber?", count(o("small", "rubber"))),
    ("is the block to the left of the cylinder large?", check(o("cube", left=CYL), "large")),
]

# Questions outside the language: each must be rejected, never graded.
OUT_OF_LANGUAGE: list[str] = [
    "why is the sky blue", "what is the cube touching", "is it the third image", "which image has a dog",
    "how far is the ball", "what is the cube's texture", "is there a dog", "hello", "asdf qwerty", "",
    "is the cube above the sphere", "is the ball next to the cube", "is the cube near the cylinder",
    "what is between the cube and the ball", "are all the cubes red", "are there exactly two cubes",
    "is there no red cube", "how many cubes are not red", "is the cube heavier than the ball",
    "is the cube bigger than the ball", "what is the biggest object", "which object is closest to the camera",
    "what color is it", "is it red", "what color are the cubes", "is the ball red or blue",
    "is there a cube or a sphere", "how many cubes and spheres are there",
    "is the cube left of the sphere behind the cylinder", "is the ball made of wood", "is there a plastic cube",
    "how many images are there", "is this the secret image", "which image is the secret one",
    "how tall is the cylinder", "is the cube rotated", "what is the name of the cube",
    "is the cube on top of the ball", "what shape is the cube's shadow", "how many colors are there",
    "what is the cube", "are the cubes left of the ball", "is one red", "what is red",
    "how many other things are left of the cube", "is the cube left of the ball and behind the cylinder",
    "what color is the ball or the cube", "is the red cube blue or green", "what is the color of the cube and the ball",
    "is there a cube a sphere and a cylinder", "how many things are red or blue cubes", "what is the size of the things",
    "describe the image", "please guess", "what time is it", "is there more than one cube",
    "is there a cube in the box", "how many cubes are there in the other images", "red cube",
    "the cube is red", "is the cube left of the ball that is behind the cylinder and right of the sphere",
    "which one is left of the cube", "what is left", "how many", "is there", "what color",
    # every word known, the question still outside the language (or not sure to mean one thing)
    "are there more cubes or spheres", "is the cube red and left of the ball", "what is the shape of the color of the cube",
    "is the red thing a thing", "how many things are the same color", "what material are the spheres",
    "is the cube or the ball red", "how many red things are blue", "is there a sphere behind the cube that is red",
    "is the ball to the left or to the right of the cube",
    "which is bigger the cube or the ball", "is the cylinder behind the cube made of metal",
    "are there other cubes",
    "are there any red or blue things", "how many things are to the left of the tiny ball or behind it",
    "is the big thing on the left a cube", "is the cube between the balls", "how many cubes are left of both balls",
    "is the ball the only sphere", "is there a second cube",
]


# --- the three measurements -------------------------------------------------------------------------

def round_trip(scenes: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    generator = QuestionGenerator()
    total, exact, same_answer = 0, 0, 0
    per_family: Counter = Counter()
    failures: list[str] = []
    for index in range(scenes):
        scene = generate_scene(rng, index=index)
        for q in generator.for_scene(scene, 10, rng):
            total += 1
            try:
                program = parse(q.question).program()
            except Unparseable as error:
                failures.append(f"{q.family}: {q.question!r} -> {error}")
                continue
            if program_key(program) == program_key(q.program):
                exact += 1
                same_answer += 1
                per_family[q.family] += 1
                continue
            try:
                agrees = execute(program, scene) == q.answer
            except IllPosed:
                agrees = False
            same_answer += agrees
            per_family[q.family] += agrees
            failures.append(f"{q.family}: {q.question!r} -> different program")
    return {"questions": total, "exact_program_rate": exact / total, "same_answer_rate": same_answer / total,
            "families": len(per_family), "failures": failures}


def held_out() -> dict:
    parsed, correct = 0, 0
    wrong: list[str] = []
    unparsed: list[str] = []
    for text, tree in HELD_OUT:
        try:
            got = parse(text)
        except Unparseable as error:
            unparsed.append(f"{text!r}: {error}")
            continue
        parsed += 1
        if program_key(got.program()) == program_key(tree.program()):
            correct += 1
        else:
            wrong.append(f"{text!r}: got {program_key(got.program())}")
    n = len(HELD_OUT)
    return {"items": n, "kinds": len({tree.kind for _, tree in HELD_OUT}), "parsed_rate": parsed / n,
            "correct_rate": correct / n, "wrong": len(wrong), "wrong_items": wrong, "unparsed_items": unparsed}


def rejection() -> dict:
    accepted = []
    for text in OUT_OF_LANGUAGE:
        try:
            tree = parse(text)
        except Unparseable:
            continue
        accepted.append(f"{text!r} -> {program_key(tree.program())}")
    n = len(OUT_OF_LANGUAGE)
    return {"items": n, "rejected_rate": (n - len(accepted)) / n, "accepted_items": accepted}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", type=int, default=200, help="scenes for the round trip (10 questions each)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="OUT", help="write the numbers to this JSON file")
    args = ap.parse_args(argv)

    start = time.perf_counter()
    results = {"round_trip": round_trip(args.scenes, args.seed), "held_out": held_out(), "rejection": rejection()}
    results["seconds"] = time.perf_counter() - start

    rt, ho, rj = results["round_trip"], results["held_out"], results["rejection"]
    print(f"round trip   {rt['questions']} generated questions, {rt['families']} families: "
          f"{rt['exact_program_rate']:.1%} same program, {rt['same_answer_rate']:.1%} same answer")
    print(f"held out     {ho['items']} player phrasings, {ho['kinds']} kinds: {ho['parsed_rate']:.1%} parsed, "
          f"{ho['correct_rate']:.1%} parsed correctly, {ho['wrong']} parsed wrongly")
    print(f"rejection    {rj['items']} out-of-language questions: {rj['rejected_rate']:.1%} rejected")
    for title, lines in (("round-trip failures", rt["failures"]), ("WRONGLY parsed", ho["wrong_items"]),
                         ("not parsed (held out)", ho["unparsed_items"]),
                         ("WRONGLY accepted", rj["accepted_items"])):
        if lines:
            print(f"\n{title}:")
            for line in lines[:20]:
                print(f"  {line}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return results


if __name__ == "__main__":
    main()

"""Issue 52: the spatial map an agent outputs (and the board draws) is its answer's evidence: the object
attention spread over the proposals' masks, per cell of a grid over the image (vqa_agent/evidence_map.py)."""
import numpy as np
import pytest

from explainers.attention import attention_payload, attribution_map
from vqa_agent.agent import VQAAgent
from vqa_agent.evidence_map import EVIDENCE_COLUMNS, CellShares, cell_of_pixel, grid_shape


def test_shares_spread_each_mask_over_the_cells_it_covers():
    masks = np.zeros((3, 8, 8), bool)
    masks[0, :4, :4] = True          # the top-left quarter
    masks[1, 6:, 6:] = True          # the bottom-right corner
    shares = CellShares.of_masks(masks)                     # mask 2 is empty: no entry
    assert shares.shape == grid_shape(8, 8) == (8, 8)
    assert set(shares.owner.tolist()) == {0, 1}
    grid = shares.spread([0.75, 0.25, 0.0])
    assert grid.dtype == np.float32 and grid.sum() == pytest.approx(1)
    # each object as hot as its weight, whatever its size: 16 cells at 0.75 and 4 at 0.25, scaled to sum to 1
    assert np.ptp(grid[:4, :4]) == 0 and np.ptp(grid[6:, 6:]) == 0
    assert grid[0, 0] / grid[7, 7] == pytest.approx(3) and grid[:4, :4].sum() == pytest.approx(12 / 13)
    assert grid[4:6].sum() == 0 and grid[:, 4:6].sum() == 0
    # a cell half covered holds half its object's weight: 4 x 80 pixels make 2 x 40 cells of 2 x 2
    masks = np.zeros((2, 4, 80), bool)
    masks[0, 0:2, 0:2] = True        # the whole of cell (0, 0)
    masks[1, 0, 2:4] = True          # the top half of cell (0, 1)
    grid = CellShares.of_masks(masks).spread([0.5, 0.5])
    assert grid.shape == (2, 40) and grid[0, 0] == pytest.approx(2 * grid[0, 1]) and grid.sum() == pytest.approx(1)
    # no weight, or weight only on an empty mask: the evidence is nowhere in particular (an even grid)
    for weights in ([0, 0, 0], [0, 0, 1], []):
        spread = (CellShares.of_masks(masks) if weights else CellShares.of_masks(masks[:0])).spread(weights)
        assert np.ptp(spread) == 0 and spread.sum() == pytest.approx(1)


def test_the_grid_is_forty_columns_over_any_mask_size():
    assert grid_shape(120, 160) == (30, EVIDENCE_COLUMNS) == grid_shape(240, 320)
    assert grid_shape(60, 80) == (30, 40) and grid_shape(10, 20) == (10, 20) and grid_shape(233, 301) == (31, 40)
    masks = np.ones((1, 233, 301), bool)
    assert CellShares.of_masks(masks).spread([1]).shape == (31, 40)


@pytest.fixture(scope="module")
def agent(tiny_agent_dir):
    return VQAAgent.from_pretrained(tiny_agent_dir, device="cpu")


def test_the_agents_map_is_its_object_attention_on_the_masks(agent, agent_world):
    from experiments.benchmark.items import load_items
    items = load_items(agent_world, max_items=12)
    outputs = agent.answer([it.image for it in items], [it.question for it in items])
    on_objects, uniform, hottest_on_heaviest = [], [], []
    for item, out in zip(items, outputs):
        grid = out.spatial_attention
        assert grid.shape == grid_shape(agent.config.image_height, agent.config.image_width)
        assert grid.sum() == pytest.approx(1, abs=1e-5) and (grid >= 0).all()
        # heat only under the proposals' masks, hottest under the most attended one
        cells = cell_of_pixel(*item.masks.shape)
        covered = [np.bincount(cells[p.mask.ravel()], minlength=grid.size).reshape(grid.shape) > 0 for p in out.proposals]
        assert (grid[~np.any(covered, axis=0)] == 0).all()
        heaviest = int(np.argmax([p.attention for p in out.proposals]))
        if out.proposals[heaviest].mask.any():
            hottest_on_heaviest.append(covered[heaviest].ravel()[grid.argmax()])
        drawn = attribution_map(attention_payload(out), item.masks.shape, "grid")
        on_objects.append(drawn[item.masks >= 0].sum())
        uniform.append((item.masks >= 0).mean())
        # the network's own grid is kept for research, at its own resolution, and not drawn
        assert out.network_attention is not None and out.network_attention.shape != out.spatial_attention.shape
    assert np.mean(on_objects) > 2 * np.mean(uniform)
    assert np.mean(hottest_on_heaviest) >= 0.75


def test_a_program_answer_about_nothing_spreads_its_evidence_over_every_object():
    # "is there a ...?" -> "no" rests on every perceived object not matching: a shipped symbolic agent's
    # outlines and map cover them all (symbolic.py: the probability of such an answer multiplies them all)
    agent = VQAAgent.from_pretrained("medium", device="cpu")
    from vqa_agent.world.render import render
    from hand_scenes import FIVE_OBJECTS, hand_scene
    image = render(hand_scene(FIVE_OBJECTS)).image
    out = agent.answer([image], ["is there a green cylinder?"])[0]
    if out.answered_by != "program":
        pytest.skip("the medium agent did not parse the question")
    assert out.answer == "no"
    weights = [p.attention for p in out.proposals]
    assert len(weights) >= 2 and np.allclose(weights, 1 / len(weights))
    assert np.ptp(out.spatial_attention) > 0

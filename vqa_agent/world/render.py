"""A fast pure-numpy ray caster that renders scenes the way CLEVR's Blender scenes look.

One primary ray per pixel finds the nearest surface: the infinite gray ground plane (z = 0) or one of
the objects (sphere, cube rotated about z, capped vertical cylinder). Each surface is lit by the
scene's point lights (key, fill, back) with shadow rays to all of them, a little ambient light and an
ambient-occlusion darkening near contacts. Floor shadows are softened by a blur among floor pixels, a
cheap stand-in for the penumbrae of CLEVR's area lights. Metal reflects one bounce of the scene
(objects, floor, gray environment) tinted by its colour, slightly blurred like CLEVR's glossy metal,
and shows sharp highlights; rubber is matte. Object silhouettes are anti-aliased by re-tracing only
the edge pixels with four sub-pixel rays, which reuse the blurred fields of the first pass.

Speed comes from culling rather than from clever code: every object, every (object, light) shadow and
every contact-darkening zone gets a conservative screen-space rectangle, and rays are intersected only
inside it (on the pixel grid a rectangle is a pair of slices, so that work runs on views); reflection
rays test a bounding sphere first. Arrays are float32, kept as separate x, y, z components, which numpy
handles faster than (N, 3) rows. Nothing is random: the same scene gives byte-identical output.
"""
from __future__ import annotations

import ctypes
import functools
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from PIL import Image

from vqa_agent.world.scene import COLORS, Scene, SceneObject

GROUND = -1  # hit id of the ground plane
SKY = -2     # hit id of a ray that hits nothing
F32 = np.float32
# 4x4 Bayer ordered-dither thresholds, centred on 0, in units of one output level.
BAYER_4X4 = (np.array([[0, 8, 2, 10], [12, 4, 14, 6], [3, 11, 1, 9], [15, 7, 13, 5]], F32) + 0.5) / 16 - 0.5
# glibc mallopt parameter and the pad of freed heap memory kept mapped (see _keep_heap_warm).
M_TOP_PAD = -2
HEAP_TOP_PAD_BYTES = 64 << 20

# Rotated-grid supersampling pattern (offsets in pixels from the pixel centre): four samples whose
# x and y coordinates are all distinct, so near-horizontal and near-vertical edges both get 4 levels.
RGSS_OFFSETS = ((-0.125, -0.375), (0.375, -0.125), (0.125, 0.375), (-0.375, 0.125))


@dataclass
class RenderConfig:
    width: int = 320
    height: int = 240
    shadows: bool = True
    reflections: bool = True
    antialias: bool = True         # re-trace object silhouette pixels with RGSS sub-pixel rays

    # Lights. Intensities come from the scene; these turn them into radiance.
    light_scale: float = 0.7               # multiplies every light's intensity
    light_reference_distance: float = 10.0  # a light delivers exactly its intensity at this distance
    light_falloff: float = 0.5             # distance attenuation exponent; CLEVR's large area lights
                                           # fall off softer than a physical point light's 2
    ambient_sky: float = 0.12              # ambient light reaching surfaces that face up
    ambient_ground: float = 0.06           # ambient light bounced from the floor onto down-facing surfaces

    # Ground and background.
    ground_albedo: float = 0.30            # CLEVR's neutral gray floor (linear reflectance)
    # Linear colour of rays that miss everything; None: the far floor's own colour (only ambient light
    # reaches it), so that no horizon line shows.
    background: tuple[float, float, float] | None = None
    environment_zenith: tuple[float, float, float] = (0.06, 0.06, 0.065)   # what metal reflects straight up
    environment_horizon: tuple[float, float, float] = (0.16, 0.16, 0.165)  # ... and towards the horizon

    # Shadows: hard shadow rays to every light, softened on the ground by a screen-space blur restricted
    # to ground pixels (a cheap stand-in for CLEVR's area-light penumbrae).
    shadow_softness: float = 0.012         # blur radius as a fraction of the image width
    blur_passes: int = 2                   # box-blur passes of every blur; two approximate a tent

    # Ambient occlusion: each object darkens nearby surfaces like an occluding sphere would.
    ao_strength: float = 0.7
    ao_radius_scale: float = 1.1           # occluding sphere radius / object radius
    ao_range: float = 3.5                  # influence ends at this many occluder radii (smoothly)

    # Rubber: matte, with a very weak broad highlight.
    rubber_specular: float = 0.06
    rubber_shininess: float = 12.0

    # Metal: weak diffuse, strong sharp highlight, one-bounce mirror reflection tinted by its colour.
    metal_diffuse: float = 0.25            # share of the diffuse term kept (metals barely scatter)
    metal_specular: float = 2.5
    metal_shininess: float = 90.0
    metal_highlight_tint: float = 0.35     # 0: white highlights, 1: highlights in the object's colour
    metal_reflectivity: float = 0.95       # mirror strength at normal incidence (times the tint)
    metal_fresnel_power: float = 5.0       # Schlick's exponent: reflections whiten and grow at grazing angles
    metal_roughness: float = 0.004         # blur of the mirror image (fraction of the image width)
    mirrored_metal_albedo: float = 0.5     # a metal seen in a mirror is shaded as diffuse at this share
                                           # of its colour (it mostly shows the dim environment)

    # Tone mapping: exposure, a soft shoulder so highlights saturate gracefully, then display gamma.
    exposure: float = 1.0
    shoulder: float = 0.8                  # linear values above this are compressed towards 1
    gamma: float = 2.2
    dither: bool = True                    # ordered dither against banding of the smooth floor

    ray_epsilon: float = 1e-3              # offset of secondary ray origins along the normal
    aa_offsets: tuple[tuple[float, float], ...] = RGSS_OFFSETS


@dataclass
class Rendering:
    image: np.ndarray  # (H, W, 3) uint8 RGB
    mask: np.ndarray   # (H, W) int16: -1 background, else index of the object visible at the pixel centre
    depth: np.ndarray  # (H, W) float32 distance along the ray; inf where the ray hits nothing


# ----------------------------------------------------------------------------------------------
# Shapes: intersection and normals, in component form (x, y, z arrays or scalars).
# ----------------------------------------------------------------------------------------------

@dataclass
class _Shape:
    kind: str
    cx: float
    cy: float
    cz: float
    r: float            # sphere radius, cube half side, cylinder radius and half height
    cos: float          # rotation about z
    sin: float
    albedo: np.ndarray  # (3,) linear colour
    metal: bool
    bound: float        # radius of the bounding sphere around (cx, cy, cz)
    half_xy: float      # half extent of the axis-aligned bounding box in x and y

    @classmethod
    def of(cls, obj: SceneObject) -> "_Shape":
        r = float(obj.radius)
        theta = math.radians(obj.rotation)
        cos, sin = math.cos(theta), math.sin(theta)
        if obj.shape == "sphere":
            bound, half_xy = r, r
        elif obj.shape == "cube":
            bound, half_xy = r * math.sqrt(3), r * (abs(cos) + abs(sin))
        elif obj.shape == "cylinder":
            bound, half_xy = r * math.sqrt(2), r
        else:
            raise ValueError(f"unknown shape {obj.shape!r}")
        # CLEVR hands its palette to Blender as linear reflectance, then shows it through sRGB.
        albedo = np.array(COLORS[obj.color], F32) / 255
        cx, cy, cz = (float(v) for v in obj.position)
        return cls(obj.shape, cx, cy, cz, r, cos, sin, albedo, obj.material == "metal", bound, half_xy)

    def box_corners(self) -> np.ndarray:
        """(8, 3) corners of an axis-aligned box that contains the object (all shapes are 2r tall)."""
        lo = [self.cx - self.half_xy, self.cy - self.half_xy, self.cz - self.r]
        hi = [self.cx + self.half_xy, self.cy + self.half_xy, self.cz + self.r]
        return np.array([[(lo, hi)[i][0], (lo, hi)[j][1], (lo, hi)[k][2]]
                         for i in (0, 1) for j in (0, 1) for k in (0, 1)], float)

    def intersect(self, o, d, eps: float) -> np.ndarray:
        """Distance t > eps to the first hit of rays o + t d (d unit), inf where they miss."""
        if self.kind == "sphere":
            return self._sphere(o, d, eps)
        if self.kind == "cube":
            return self._cube(o, d, eps)
        return self._cylinder(o, d, eps)

    def _sphere(self, o, d, eps):
        x, y, z = o[0] - self.cx, o[1] - self.cy, o[2] - self.cz
        dx, dy, dz = d
        b = x * dx + y * dy + z * dz
        disc = b * b - (x * x + y * y + z * z - self.r * self.r)
        t = -b - np.sqrt(np.maximum(disc, 0))
        return np.where((disc > 0) & (t > eps), t, np.inf).astype(F32, copy=False)

    def _local(self, o, d):
        """Ray in the object's frame: centred, rotated by -rotation about z."""
        x, y, z = o[0] - self.cx, o[1] - self.cy, o[2] - self.cz
        c, s = self.cos, self.sin
        return (c * x + s * y, c * y - s * x, z), (c * d[0] + s * d[1], c * d[1] - s * d[0], d[2])

    def _cube(self, o, d, eps):
        (x, y, z), (dx, dy, dz) = self._local(o, d)
        h = self.r
        with np.errstate(divide="ignore", invalid="ignore"):
            near, far = None, None
            for p, dp in ((x, dx), (y, dy), (z, dz)):
                inv = 1 / dp
                t1, t2 = (-h - p) * inv, (h - p) * inv
                lo, hi = np.minimum(t1, t2), np.maximum(t1, t2)
                near = lo if near is None else np.maximum(near, lo)
                far = hi if far is None else np.minimum(far, hi)
            return np.where((near <= far) & (near > eps), near, np.inf).astype(F32, copy=False)

    def _cylinder(self, o, d, eps):
        (x, y, z), (dx, dy, dz) = self._local(o, d)
        r = h = self.r
        with np.errstate(divide="ignore", invalid="ignore"):
            a = dx * dx + dy * dy
            b = x * dx + y * dy
            disc = b * b - a * (x * x + y * y - r * r)
            t_side = (-b - np.sqrt(np.maximum(disc, 0))) / a
            z_side = z + t_side * dz
            t_side = np.where((disc > 0) & (t_side > eps) & (np.abs(z_side) <= h), t_side, np.inf)
            # Only the top cap can be hit from outside (the bottom one lies on the floor).
            t_cap = (h - z) / dz
            xc, yc = x + t_cap * dx, y + t_cap * dy
            t_cap = np.where((dz < 0) & (t_cap > eps) & (xc * xc + yc * yc <= r * r), t_cap, np.inf)
        return np.minimum(t_side, t_cap).astype(F32, copy=False)

    def normal(self, px, py, pz):
        """Outward unit normal at surface points."""
        x, y, z = px - self.cx, py - self.cy, pz - self.cz
        if self.kind == "sphere":
            inv = 1 / self.r
            return x * inv, y * inv, z * inv
        c, s = self.cos, self.sin
        lx, ly = c * x + s * y, c * y - s * x
        if self.kind == "cube":
            ax, ay, az = np.abs(lx), np.abs(ly), np.abs(z)
            on_x = (ax >= ay) & (ax >= az)
            on_y = ~on_x & (ay >= az)
            on_z = ~on_x & ~on_y
            nlx = np.where(on_x, np.sign(lx), 0).astype(F32)
            nly = np.where(on_y, np.sign(ly), 0).astype(F32)
            nz = np.where(on_z, np.sign(z), 0).astype(F32)
        else:
            rad = np.sqrt(lx * lx + ly * ly)
            cap = (self.r - z) < (self.r - rad)  # nearer the top rim than the side wall
            inv = np.where(cap, 0, 1 / np.maximum(rad, 1e-6)).astype(F32)
            nlx, nly, nz = lx * inv, ly * inv, cap.astype(F32)
        return c * nlx - s * nly, s * nlx + c * nly, nz


# ----------------------------------------------------------------------------------------------
# Ray bundles.
# ----------------------------------------------------------------------------------------------

@dataclass
class _Rays:
    """Camera rays: the full pixel grid, arrays (H, W), or a flat group of scattered rays, arrays (N,).

    On the grid a screen rectangle is a pair of slices, so per-object work runs on views without
    copying; a flat group finds its rays in a rectangle by comparing pixel coordinates."""
    px: np.ndarray      # pixel x coordinate of each ray (continuous, pixel centres at +0.5)
    py: np.ndarray
    pixel: np.ndarray   # flat index of the pixel each ray belongs to
    d: tuple            # unit directions (dx, dy, dz)
    grid: bool          # arrays are the (H, W) pixel grid
    centres: bool       # rays through pixel centres: the pass that computes the softened fields

    @property
    def shape(self) -> tuple:
        return self.px.shape

    def in_rect(self, rect):
        """Selector (slices or indices) of the rays whose pixel coordinates fall inside rect
        = (x0, y0, x1, y1); None when there are none."""
        x0, y0, x1, y1 = rect
        if self.grid:
            height, width = self.px.shape
            c0, c1 = max(math.ceil(x0 - 0.5), 0), min(math.floor(x1 - 0.5) + 1, width)
            r0, r1 = max(math.ceil(y0 - 0.5), 0), min(math.floor(y1 - 0.5) + 1, height)
            return (slice(r0, r1), slice(c0, c1)) if c0 < c1 and r0 < r1 else None
        idx = np.flatnonzero((self.px >= x0) & (self.px <= x1) & (self.py >= y0) & (self.py <= y1))
        return idx if idx.size else None

    def subset(self, mask: np.ndarray) -> "_Rays":
        """The rays where mask is True, as a flat group."""
        return _Rays(self.px[mask], self.py[mask], self.pixel[mask], tuple(c[mask] for c in self.d),
                     grid=False, centres=self.centres)


def _take(v: tuple, sel) -> tuple:
    """Select entries of each component; scalar components are shared by all rays."""
    return tuple(c[sel] if isinstance(c, np.ndarray) else c for c in v)


def _lookup(field: np.ndarray | None, pixels: np.ndarray, channels: int | None = None) -> np.ndarray:
    """field[pixels], all NaN (unknown) when the grid pass produced no field."""
    if field is None:
        return np.full((*pixels.shape, *([channels] if channels else [])), np.nan, F32)
    return field[pixels]


def _box_blur(img: np.ndarray, radius: int, passes: int) -> np.ndarray:
    """Separable box blur over the first two axes, zero padded (callers normalise by blurred weights).

    Sums 2r+1 shifted slices: SIMD adds beat numpy's sequential cumsum several times at these radii."""
    if radius == 0:
        return img
    size = 2 * radius + 1
    for _ in range(passes):
        for axis in (0, 1):
            pad = [(0, 0)] * img.ndim
            pad[axis] = (radius, radius)
            padded = np.pad(img, pad)
            n = img.shape[axis]
            window = [slice(None)] * img.ndim
            window[axis] = slice(0, n)
            total = padded[tuple(window)].copy()
            for shift in range(1, size):
                window[axis] = slice(shift, shift + n)
                total += padded[tuple(window)]
            img = total * (1 / size)
    return img


# ----------------------------------------------------------------------------------------------
# The renderer.
# ----------------------------------------------------------------------------------------------

@dataclass
class _Fields:
    """Per-pixel (H*W, ...) results of the grid pass that the sub-pixel pass reuses; NaN = unknown."""
    floor_light: np.ndarray | None = None  # softened share of direct light reaching the floor
    reflection: np.ndarray | None = None   # softened colour seen in metal, (H*W, 3)


class _Renderer:
    """Everything derived from one scene and config, plus the shading pipeline over ray bundles."""

    def __init__(self, scene: Scene, config: RenderConfig):
        self.cfg = config
        camera = scene.camera
        if (camera.width, camera.height) != (config.width, config.height):
            camera = replace(camera, width=config.width, height=config.height)
        self.W, self.H = config.width, config.height
        self.forward, self.right, self.up = camera.axes()
        self.eye = tuple(float(v) for v in camera.position)
        self.half = math.tan(math.radians(camera.fov_deg) / 2)
        self.shapes = [_Shape.of(o) for o in scene.objects]
        self.lights = [(np.array(l.position, float), float(l.intensity) * config.light_scale) for l in scene.lights]
        self.object_rects = [self._rect(s.box_corners()) for s in self.shapes]
        # A point can be shadowed by an object only inside the hull of the object's box and the box's
        # projection from the light onto the floor: the rectangle around both is conservative.
        self.shadow_rects = [[self._shadow_rect(s, pos) for s in self.shapes] for pos, _ in self.lights]
        self.ao_rects = []
        for s in self.shapes:
            reach = config.ao_range * config.ao_radius_scale * s.r
            lo = np.array([s.cx - reach, s.cy - reach, 0.0])
            hi = np.array([s.cx + reach, s.cy + reach, s.cz + reach])
            corners = np.array([[(lo, hi)[i][0], (lo, hi)[j][1], (lo, hi)[k][2]]
                                for i in (0, 1) for j in (0, 1) for k in (0, 1)])
            self.ao_rects.append(self._rect(corners))
        far_floor = config.ground_albedo * config.ambient_sky
        self.background = np.array(config.background or (far_floor,) * 3, F32)
        self.shadow_blur_radius = round(config.shadow_softness * self.W)
        self.roughness_radius = round(config.metal_roughness * self.W)

    # -- projection -------------------------------------------------------------------------
    def _rect(self, points: np.ndarray):
        """Screen rectangle (x0, y0, x1, y1) around world points, or the whole screen if any is behind."""
        rel = points - np.array(self.eye)
        depth = rel @ self.forward
        if np.any(depth <= 1e-3):
            return (-1e9, -1e9, 1e9, 1e9)
        x = (rel @ self.right) / (depth * self.half)
        y = (rel @ self.up) / (depth * self.half * self.H / self.W)
        px, py = (x + 1) * self.W / 2, (1 - y) * self.H / 2
        margin = 1.0  # a pixel of slack against rounding
        return (px.min() - margin, py.min() - margin, px.max() + margin, py.max() + margin)

    def _shadow_rect(self, shape: _Shape, light: np.ndarray):
        corners = shape.box_corners()
        if np.any(corners[:, 2] >= light[2] - 1e-3):
            return (-1e9, -1e9, 1e9, 1e9)  # light below the object top: the shadow is unbounded
        scale = light[2] / (light[2] - corners[:, 2])
        on_floor = light + (corners - light) * scale[:, None]
        return self._rect(np.concatenate([corners, on_floor]))

    def primary_rays(self) -> _Rays:
        px = np.broadcast_to(np.arange(self.W, dtype=F32)[None, :] + 0.5, (self.H, self.W))
        py = np.broadcast_to(np.arange(self.H, dtype=F32)[:, None] + 0.5, (self.H, self.W))
        pixel = np.arange(self.W * self.H).reshape(self.H, self.W)
        return self._rays(px, py, pixel, grid=True)

    def subpixel_rays(self, pixels: np.ndarray) -> _Rays:
        """len(aa_offsets) rays per listed pixel, offset-major (all first samples, then second...)."""
        offsets = np.array(self.cfg.aa_offsets, F32)
        cx = (pixels % self.W).astype(F32) + 0.5
        cy = (pixels // self.W).astype(F32) + 0.5
        px = (cx[None, :] + offsets[:, :1]).ravel()
        py = (cy[None, :] + offsets[:, 1:]).ravel()
        return self._rays(px, py, np.tile(pixels, len(offsets)), grid=False)

    def _rays(self, px, py, pixel, grid) -> _Rays:
        xs = (px * (2 / self.W) - 1) * self.half
        ys = (1 - py * (2 / self.H)) * (self.half * self.H / self.W)
        f, r, u = self.forward, self.right, self.up
        dx = float(f[0]) + xs * float(r[0]) + ys * float(u[0])
        dy = float(f[1]) + xs * float(r[1]) + ys * float(u[1])
        dz = float(f[2]) + xs * float(r[2]) + ys * float(u[2])
        inv = 1 / np.sqrt(dx * dx + dy * dy + dz * dz)
        return _Rays(px, py, pixel, (dx * inv, dy * inv, dz * inv), grid=grid, centres=grid)

    # -- visibility -------------------------------------------------------------------------
    def trace(self, rays: _Rays):
        """Nearest hit of every camera ray: (t, hit id), both shaped like the rays."""
        dz = rays.d[2]
        with np.errstate(divide="ignore"):
            t = np.where(dz < 0, -self.eye[2] / dz, np.inf).astype(F32)
        hit = np.where(dz < 0, GROUND, SKY).astype(np.int16)
        for k, shape in enumerate(self.shapes):
            sel = rays.in_rect(self.object_rects[k])
            if sel is None:
                continue
            tk = shape.intersect(self.eye, _take(rays.d, sel), self.cfg.ray_epsilon)
            closer = tk < t[sel]
            t[sel] = np.where(closer, tk, t[sel])
            hit[sel] = np.where(closer, np.int16(k), hit[sel])
        return t, hit

    # -- shading ----------------------------------------------------------------------------
    def radiance(self, rays: _Rays, t: np.ndarray, hit: np.ndarray, fields: _Fields | None = None):
        """Linear RGB (rays.shape + (3,)) of camera rays given their nearest hits, and the fields.

        The grid pass (fields None) computes the per-pixel softened floor light and metal reflections;
        the sub-pixel pass gets them back and looks them up instead of tracing those rays again.
        """
        fields = fields or _Fields()
        color = np.empty((*rays.shape, 3), F32)
        color[:] = self.background
        ground = hit == GROUND
        if ground.any():
            color[ground] = self._shade_floor(rays, t, hit, fields)[ground][:, None]
        objects = hit >= 0
        if objects.any():
            color[objects] = self._shade_objects(rays.subset(objects), t[objects], hit[objects], fields)
        return color, fields

    def _light(self, pos, intensity, px, py, pz):
        """Unit vector to a light, squared distance, and the intensity arriving (before n.l)."""
        lx, ly, lz = float(pos[0]) - px, float(pos[1]) - py, float(pos[2]) - pz
        dist2 = lx * lx + ly * ly + lz * lz
        inv = 1 / np.sqrt(dist2)
        ref = self.cfg.light_reference_distance
        falloff = ref * inv if self.cfg.light_falloff == 1 else (ref * inv) ** self.cfg.light_falloff
        return (lx * inv, ly * inv, lz * inv), dist2, intensity * falloff

    def _shade_floor(self, rays, t, hit, fields):
        """Floor radiance for every ray as if it hit the floor (callers keep the floor hits only):
        full-array arithmetic is cheaper than gathering the floor pixels first."""
        cfg = self.cfg
        tt = np.where(hit == GROUND, t, F32(0))
        px = self.eye[0] + tt * rays.d[0]
        py = self.eye[1] + tt * rays.d[1]
        lights = [self._light(pos, intensity, px, py, 0.0) for pos, intensity in self.lights]
        lights = [(ldir, dist2, energy * ldir[2]) for ldir, dist2, energy in lights]  # n.l with n = +z
        direct = sum(energy for _, _, energy in lights)
        if cfg.shadows:
            if rays.centres:
                ground = np.flatnonzero(hit == GROUND)
                share = self._floor_share(rays, px, py, lights)
                fields.floor_light = self._soften(share.ravel()[ground], ground, self.shadow_blur_radius)
            share = _lookup(fields.floor_light, rays.pixel)
            missing = np.isnan(share) & (hit == GROUND)  # sub-pixel floor hits with no floor pixel near
            if missing.any():
                near = [(_take(ldir, missing), dist2[missing], energy[missing]) for ldir, dist2, energy in lights]
                share[missing] = self._floor_share(rays.subset(missing), px[missing], py[missing], near)
            direct = direct * share
        occlusion = self._occlusion(rays, (px, py, 0.0), (0.0, 0.0, 1.0))
        return cfg.ground_albedo * (direct + cfg.ambient_sky) * occlusion

    def _floor_share(self, rays, px, py, lights) -> np.ndarray:
        """Share of the direct light that reaches floor points past every object (hard shadows)."""
        eps = self.cfg.ray_epsilon
        arriving = np.zeros(rays.shape, F32)
        total = np.zeros(rays.shape, F32)
        for li, (ldir, dist2, energy) in enumerate(lights):
            vis = np.ones(rays.shape, F32)
            for k, shape in enumerate(self.shapes):
                sel = rays.in_rect(self.shadow_rects[li][k])
                if sel is None:
                    continue
                tk = shape.intersect((px[sel], py[sel], eps), _take(ldir, sel), eps)
                vis[sel] *= tk * tk >= dist2[sel]
            arriving += energy * vis
            total += energy
        return arriving / np.maximum(total, 1e-6)

    def _shade_objects(self, group, t, h, fields):
        """Object radiance, (N, 3), for a flat group of rays that hit objects h."""
        cfg = self.cfg
        dx, dy, dz = group.d
        px, py, pz = self.eye[0] + t * dx, self.eye[1] + t * dy, self.eye[2] + t * dz
        nx, ny, nz = np.empty_like(px), np.empty_like(px), np.empty_like(px)
        albedo = np.empty((t.size, 3), F32)
        metal = np.zeros(t.size, bool)
        order = np.argsort(h, kind="stable")
        bounds = np.searchsorted(h[order], np.arange(len(self.shapes) + 1))
        for k, shape in enumerate(self.shapes):
            sel = order[bounds[k]:bounds[k + 1]]
            if sel.size:
                nx[sel], ny[sel], nz[sel] = shape.normal(px[sel], py[sel], pz[sel])
                albedo[sel] = shape.albedo
                metal[sel] = shape.metal
        eps = cfg.ray_epsilon
        origin = (px + eps * nx, py + eps * ny, pz + eps * nz)

        diffuse = np.zeros(t.size, F32)
        spec = np.zeros(t.size, F32)
        shininess = np.where(metal, F32(cfg.metal_shininess), F32(cfg.rubber_shininess))
        spec_weight = np.where(metal, F32(cfg.metal_specular), F32(cfg.rubber_specular))
        for li, (pos, intensity) in enumerate(self.lights):
            (lx, ly, lz), dist2, energy = self._light(pos, intensity, px, py, pz)
            ndotl = np.maximum(nx * lx + ny * ly + nz * lz, 0)
            if cfg.shadows:
                energy = energy * self._object_shadows(group, h, origin, (lx, ly, lz), dist2, li, ndotl)
            diffuse += energy * ndotl
            # Blinn-Phong highlight; the view vector is -d.
            hx, hy, hz = lx - dx, ly - dy, lz - dz
            ndoth = np.maximum(nx * hx + ny * hy + nz * hz, 0) / np.sqrt(hx * hx + hy * hy + hz * hz)
            spec += np.where(ndotl > 0, energy * spec_weight * ndoth ** shininess, 0)

        # Ambient: sky from above, floor bounce from below, darkened by nearby objects.
        up = 0.5 + 0.5 * nz
        ambient = cfg.ambient_sky * up + cfg.ambient_ground * (1 - up)
        occlusion = self._occlusion(group, (px, py, pz), (nx, ny, nz), h)
        rgb = albedo * ((diffuse + ambient) * occlusion)[:, None]
        rubber = ~metal
        rgb[rubber] += spec[rubber, None]
        if metal.any():
            m = np.flatnonzero(metal)
            ddotn = dx[m] * nx[m] + dy[m] * ny[m] + dz[m] * nz[m]
            fresnel = ((1 - np.minimum(-ddotn, 1)) ** cfg.metal_fresnel_power)[:, None]
            tint = albedo[m]
            rgb[m] *= cfg.metal_diffuse * (1 - fresnel)
            if cfg.reflections:
                mirror_dir = (dx[m] - 2 * ddotn * nx[m], dy[m] - 2 * ddotn * ny[m], dz[m] - 2 * ddotn * nz[m])
                refl = self._mirror(group.pixel[m], fields, _take(origin, m), mirror_dir, h[m], group.centres)
                reflectance = cfg.metal_reflectivity * (tint + (1 - tint) * fresnel)
                rgb[m] += refl * reflectance * occlusion[m, None]
            highlight = (1 - cfg.metal_highlight_tint) + cfg.metal_highlight_tint * tint
            rgb[m] += spec[m, None] * highlight
        return rgb

    def _object_shadows(self, group, h, origin, ldir, dist2, li, ndotl) -> np.ndarray:
        """Visibility (0/1) of light li from object points; only lit, culled candidates are traced."""
        eps = self.cfg.ray_epsilon
        vis = np.ones(group.shape, F32)
        for k, shape in enumerate(self.shapes):
            s = group.in_rect(self.shadow_rects[li][k])
            if s is None:
                continue
            # Convex objects never shadow themselves beyond what n.l < 0 already darkens.
            s = s[(h[s] != k) & (ndotl[s] > 0) & (vis[s] > 0)]
            if s.size == 0:
                continue
            tk = shape.intersect(_take(origin, s), _take(ldir, s), eps)
            vis[s[tk * tk < dist2[s]]] = 0
        return vis

    def _mirror(self, pixels, fields, origin, direction, source, centres: bool) -> np.ndarray:
        """Colour seen by metal's mirror rays, softened like CLEVR's slightly rough metal."""
        if centres:
            refl = self._reflection(origin, direction, source)
            fields.reflection = self._soften(refl, pixels, self.roughness_radius)
            return fields.reflection[pixels]
        refl = _lookup(fields.reflection, pixels, channels=3)
        missing = np.flatnonzero(np.isnan(refl[:, 0]))  # sub-pixel metal hits with no metal pixel near
        if missing.size:
            refl[missing] = self._reflection(_take(origin, missing), _take(direction, missing), source[missing])
        return refl

    def _soften(self, values: np.ndarray, pixels: np.ndarray, radius: int) -> np.ndarray:
        """Blur values given at some pixels among those pixels only (normalised convolution).

        Returns a flat per-pixel field like the grid, defined also just outside the set (the sub-pixel
        pass needs it at silhouettes) and NaN where no listed pixel is near. Only the bounding box of
        the listed pixels plus the blur's reach is blurred: metal usually covers a small part."""
        channels = values.shape[1:]
        out = np.full((self.W * self.H, *channels), np.nan, F32)
        passes = self.cfg.blur_passes
        reach = radius * passes
        rows, cols = pixels // self.W, pixels % self.W
        r0, r1 = max(rows.min() - reach, 0), min(rows.max() + reach + 1, self.H)
        c0, c1 = max(cols.min() - reach, 0), min(cols.max() + reach + 1, self.W)
        h, w = r1 - r0, c1 - c0
        local = (rows - r0) * w + (cols - c0)
        weight = np.zeros(h * w, F32)
        value = np.zeros((h * w, *channels), F32)
        weight[local] = 1
        value[local] = values
        num = _box_blur(value.reshape(h, w, *channels), radius, passes)
        den = _box_blur(weight.reshape(h, w), radius, passes)
        # No listed pixel within reach: leave NaN so that callers trace instead.
        den = np.where(den > 0, den, np.nan).reshape(h, w, *(1 for _ in channels))
        out.reshape(self.H, self.W, *channels)[r0:r1, c0:c1] = num / den
        return out

    def _occlusion(self, rays, p, n, h=None) -> np.ndarray:
        """Ambient occlusion from each object seen as a sphere, faded to 0 at its range.
        h: object id of each point (flat groups of object hits), so objects skip themselves."""
        occ = np.ones(rays.shape, F32)
        for k, shape in enumerate(self.shapes):
            sel = rays.in_rect(self.ao_rects[k])
            if sel is None:
                continue
            if h is not None:
                sel = sel[h[sel] != k]
                if sel.size == 0:
                    continue
            occ[sel] *= self._sphere_occlusion((shape.cx, shape.cy, shape.cz), shape.r, _take(p, sel), _take(n, sel))
        return occ

    def _sphere_occlusion(self, centre, radius, p, n):
        """Light left over (0..1) at points p with normals n next to an occluding sphere."""
        cfg = self.cfg
        vx, vy, vz = centre[0] - p[0], centre[1] - p[1], centre[2] - p[2]
        d2 = vx * vx + vy * vy + vz * vz
        cos = np.maximum(n[0] * vx + n[1] * vy + n[2] * vz, 0) / np.sqrt(d2)
        r = cfg.ao_radius_scale * radius
        # Solid-angle term r^2/d^2, shifted so that it reaches exactly 0 at the culling range.
        amount = np.maximum(r * r / d2 - 1 / cfg.ao_range ** 2, 0) * cos
        return 1 - cfg.ao_strength * np.minimum(amount, 1)

    def _reflection(self, o, d, source: np.ndarray) -> np.ndarray:
        """Colour seen by mirror rays from metal surfaces: objects and floor lit without shadows,
        else the gray environment. source: id of the object each ray leaves (never hit again)."""
        cfg = self.cfg
        eps = cfg.ray_epsilon
        n = len(source)
        dx, dy, dz = d
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(dz < 0, -o[2] / dz, np.inf).astype(F32)
        hit = np.where(dz < 0, GROUND, SKY).astype(np.int16)
        for k, shape in enumerate(self.shapes):
            # Bounding-sphere test first: cheap and rejects most rays.
            x, y, z = o[0] - shape.cx, o[1] - shape.cy, o[2] - shape.cz
            b = x * dx + y * dy + z * dz
            c = x * x + y * y + z * z - shape.bound * shape.bound
            # An origin inside the bounding sphere may still hit the object whichever way it goes.
            cand = np.flatnonzero(((c < 0) | ((b < 0) & (b * b > c))) & (source != k))
            if cand.size == 0:
                continue
            tk = shape.intersect(tuple(v[cand] for v in o), tuple(v[cand] for v in d), eps)
            closer = tk < t[cand]
            t[cand[closer]] = tk[closer]
            hit[cand[closer]] = k

        color = np.empty((n, 3), F32)
        # Environment: darker overhead, lighter towards the horizon.
        w = np.clip(dz, 0, 1)[:, None]
        zen, hor = np.array(cfg.environment_zenith, F32), np.array(cfg.environment_horizon, F32)
        color[:] = hor + (zen - hor) * w
        surf = np.flatnonzero(hit != SKY)
        if surf.size == 0:
            return color
        h, tt = hit[surf], t[surf]
        px, py, pz = o[0][surf] + tt * dx[surf], o[1][surf] + tt * dy[surf], o[2][surf] + tt * dz[surf]
        nx, ny, nz = np.zeros_like(px), np.zeros_like(px), np.ones_like(px)
        albedo = np.empty((surf.size, 3), F32)
        albedo[:] = cfg.ground_albedo
        for k in np.unique(h[h >= 0]):
            sel = np.flatnonzero(h == k)
            shape = self.shapes[k]
            nx[sel], ny[sel], nz[sel] = shape.normal(px[sel], py[sel], pz[sel])
            albedo[sel] = shape.albedo * (cfg.mirrored_metal_albedo if shape.metal else 1.0)
        up = 0.5 + 0.5 * nz
        light = cfg.ambient_sky * up + cfg.ambient_ground * (1 - up)
        for pos, intensity in self.lights:
            (lx, ly, lz), _, energy = self._light(pos, intensity, px, py, pz)
            light = light + energy * np.maximum(nx * lx + ny * ly + nz * lz, 0)
        # The floor right under the mirror lies in the mirror's own contact darkening: apply it.
        ground = np.flatnonzero(h == GROUND)
        if ground.size:
            src = source[surf[ground]]
            centres = np.array([(s.cx, s.cy, s.cz) for s in self.shapes], F32)[src].T
            radii = np.array([s.r for s in self.shapes], F32)[src]
            light[ground] *= self._sphere_occlusion(centres, radii, _take((px, py, pz), ground), (0.0, 0.0, 1.0))
        color[surf] = albedo * light[:, None]
        return color

    # -- output ----------------------------------------------------------------------------
    def tone_map(self, linear: np.ndarray) -> np.ndarray:
        """(H, W, 3) linear radiance -> uint8 display RGB."""
        cfg = self.cfg
        x = linear * cfg.exposure
        k = cfg.shoulder
        # Identity below the knee, then an exponential approach to 1 with matching slope.
        x = np.where(x < k, x, 1 - (1 - k) * np.exp(-(x - k) / (1 - k)))
        x = np.clip(x, 0, 1) ** (1 / cfg.gamma) * 255
        if cfg.dither:
            # A fixed ordered-dither pattern of +-half a level hides 8-bit banding on the smooth floor
            # (Cycles' sampling noise does that in CLEVR) and keeps the output deterministic.
            h, w = x.shape[:2]
            x += np.tile(BAYER_4X4, (h // 4 + 1, w // 4 + 1))[:h, :w, None]
        return np.clip(x + 0.5, 0, 255).astype(np.uint8)


def _edge_pixels(hit: np.ndarray) -> np.ndarray:
    """Flat indices of pixels whose hit id differs from a 4-neighbour's (silhouettes)."""
    edge = np.zeros(hit.shape, bool)
    diff_y = hit[1:] != hit[:-1]
    diff_x = hit[:, 1:] != hit[:, :-1]
    edge[1:] |= diff_y
    edge[:-1] |= diff_y
    edge[:, 1:] |= diff_x
    edge[:, :-1] |= diff_x
    return np.flatnonzero(edge)


@functools.cache
def _keep_heap_warm() -> bool:
    """Ask glibc to keep freed heap memory mapped (once per process).

    A render makes a few hundred image-sized temporaries. By default glibc hands the freed top of the
    heap back to the kernel and page-faults it in again for the next temporary, which costs about as
    much as the arithmetic itself (a render takes ~1.5x as long). Keeping a pad of freed memory is a
    process-wide allocator setting, harmless for other code; elsewhere than glibc this does nothing."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(M_TOP_PAD, HEAP_TOP_PAD_BYTES))
    except (OSError, AttributeError):
        return False


def render(scene: Scene, config: RenderConfig | None = None) -> Rendering:
    """Image, per-pixel object mask and depth of a scene."""
    _keep_heap_warm()
    config = config or RenderConfig()
    r = _Renderer(scene, config)
    rays = r.primary_rays()
    t, hit = r.trace(rays)
    color, fields = r.radiance(rays, t, hit)
    H, W = config.height, config.width
    hit_image = hit.reshape(H, W)
    if config.antialias and len(config.aa_offsets):
        edges = _edge_pixels(hit_image)
        if edges.size:
            sub = r.subpixel_rays(edges)
            st, shit = r.trace(sub)
            scolor, _ = r.radiance(sub, st, shit, fields)
            color.reshape(-1, 3)[edges] = scolor.reshape(len(config.aa_offsets), edges.size, 3).mean(axis=0)
    image = r.tone_map(color)
    mask = np.where(hit_image >= 0, hit_image, -1).astype(np.int16)
    depth = np.where(hit_image == SKY, np.inf, t.reshape(H, W)).astype(F32)
    return Rendering(image=image, mask=mask, depth=depth)


def visible_pixel_counts(mask: np.ndarray, n_objects: int) -> np.ndarray:
    """Number of pixels where each object is visible, shape (n_objects,)."""
    return np.bincount(mask[mask >= 0].ravel(), minlength=n_objects)[:n_objects]


def save_mask_png(mask: np.ndarray, path) -> None:
    """PNG of index + 1 per pixel (0 = background): 8-bit when it fits, else 16-bit."""
    values = mask.astype(np.int32) + 1
    if values.max(initial=0) < 256:
        Image.fromarray(values.astype(np.uint8)).save(path)
    else:
        Image.fromarray(values.astype(np.uint16)).save(path)


def load_mask_png(path) -> np.ndarray:
    with Image.open(Path(path)) as img:
        return (np.array(img).astype(np.int32) - 1).astype(np.int16)

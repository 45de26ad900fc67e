// nbody_fold_error: what folding the mass into the interaction costs in accuracy, measured against
// float64. Each form below is evaluated on the CPU with the float32 operations the GPU kernel
// would issue (fmaf where the kernel has an FFMA; this file is built with -ffp-contract=off so the
// compiler adds none), the reciprocal square root correctly rounded (the GPU's MUFU.RSQ is within
// 2 ulp of it, the same for every form).
//
//   tuned (v8)        dx = xj - xi; r2 = FMA chain from eps^2; s = m * inv^3 (3 FMUL); a += dx * s
//                     13 instructions per interaction, any masses
//   equal-mass fold   the same with s = inv^3 (2 FMUL), the sum multiplied by m once: 12; equal
//                     masses only (v8's *_fold shapes check for it on the GPU)
//   scaled coords     k = m^-1/2 per body j, tile holds k*xj and eps^2/m; dx' = fma(-k, xi, k*xj)
//                     (1 FFMA instead of FADD), u = |dx'|^2 + eps^2/m = r2/m, t = u^-3/2 (2 FMUL),
//                     a += dx' * t = m dx / r^3: 12 instructions, any masses
//   expanded r^2      r2 = |xj|^2 + eps^2 + |xi|^2 - 2 xi.xj with m^-2/3 folded in per j: 4 FFMA,
//                     2 FMUL, a = sum xj s - xi sum s: 11 instructions; the self term excluded
//                     (with it, the error is of order 1)
// Usage: nbody_fold_error (no arguments; about 10 s on 16 cores).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "nbody/plummer.hpp"
#include "nbody/system.hpp"

namespace {
using nbody::Bodies;

enum class Form { tuned, equal_mass_fold, scaled_coordinates, expanded_r2 };
const char* form_name(Form f) {
  switch (f) {
    case Form::tuned: return "tuned (v8), 13";
    case Form::equal_mass_fold: return "equal-mass fold, 12";
    case Form::scaled_coordinates: return "scaled coordinates, 12";
    case Form::expanded_r2: return "expanded r^2, 11";
  }
  return "?";
}

struct Accel {
  std::vector<float> x, y, z;
};

Accel evaluate(const Bodies& b, float eps2, Form form) {
  const long n = static_cast<long>(b.size());
  Accel a{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n)};
  // per-j values a tile would hold
  std::vector<float> k(n), kx(n), ky(n), kz(n), ce(n), c(n), px(n), py(n), pz(n), pw(n);
  for (long j = 0; j < n; ++j) {
    const float m = b.m[j];
    k[j] = 1.f / std::sqrt(m);
    kx[j] = k[j] * b.x[j];
    ky[j] = k[j] * b.y[j];
    kz[j] = k[j] * b.z[j];
    ce[j] = eps2 / m;
    c[j] = std::pow(m, -2.f / 3.f);
    px[j] = c[j] * b.x[j];
    py[j] = c[j] * b.y[j];
    pz[j] = c[j] * b.z[j];
    pw[j] = c[j] * std::fmaf(b.z[j], b.z[j], std::fmaf(b.y[j], b.y[j], std::fmaf(b.x[j], b.x[j], eps2)));
  }
#pragma omp parallel for schedule(dynamic, 16)
  for (long i = 0; i < n; ++i) {
    const float xi = b.x[i], yi = b.y[i], zi = b.z[i];
    float ax = 0, ay = 0, az = 0, sum_s = 0;
    const float nx = -2 * xi, ny = -2 * yi, nz = -2 * zi;
    const float q = std::fmaf(zi, zi, std::fmaf(yi, yi, xi * xi));
    for (long j = 0; j < n; ++j) {
      if (form == Form::tuned || form == Form::equal_mass_fold) {
        const float dx = b.x[j] - xi, dy = b.y[j] - yi, dz = b.z[j] - zi;
        const float r2 = std::fmaf(dz, dz, std::fmaf(dy, dy, std::fmaf(dx, dx, eps2)));
        const float inv = 1.f / std::sqrt(r2);
        const float s = form == Form::tuned ? b.m[j] * inv * inv * inv : inv * inv * inv;
        ax = std::fmaf(dx, s, ax);
        ay = std::fmaf(dy, s, ay);
        az = std::fmaf(dz, s, az);
      } else if (form == Form::scaled_coordinates) {
        const float dx = std::fmaf(-k[j], xi, kx[j]), dy = std::fmaf(-k[j], yi, ky[j]),
                    dz = std::fmaf(-k[j], zi, kz[j]);
        const float u = std::fmaf(dz, dz, std::fmaf(dy, dy, std::fmaf(dx, dx, ce[j])));
        const float inv = 1.f / std::sqrt(u);
        const float t = inv * inv * inv;
        ax = std::fmaf(dx, t, ax);
        ay = std::fmaf(dy, t, ay);
        az = std::fmaf(dz, t, az);
      } else {
        if (j == i) continue;
        const float u = std::fmaf(nz, pz[j], std::fmaf(ny, py[j], std::fmaf(nx, px[j], std::fmaf(q, c[j], pw[j]))));
        const float inv = 1.f / std::sqrt(u);
        const float s = inv * inv * inv;
        ax = std::fmaf(b.x[j], s, ax);
        ay = std::fmaf(b.y[j], s, ay);
        az = std::fmaf(b.z[j], s, az);
        sum_s += s;
      }
    }
    if (form == Form::equal_mass_fold) {
      ax *= b.m[0];
      ay *= b.m[0];
      az *= b.m[0];
    } else if (form == Form::expanded_r2) {
      ax = std::fmaf(-xi, sum_s, ax);
      ay = std::fmaf(-yi, sum_s, ay);
      az = std::fmaf(-zi, sum_s, az);
    }
    a.x[i] = ax;
    a.y[i] = ay;
    a.z[i] = az;
  }
  return a;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    std::fprintf(stderr,
                 "nbody_fold_error: takes no arguments (got '%s'); see the comment at the top of fold_error.cpp\n",
                 argv[1]);
    return 2;
  }
  std::printf("# float32 forms of the interaction against float64: equal-mass Plummer spheres (seed 300 + n)\n");
  std::printf("# max / median relative acceleration error; the course's bounds: 1e-4 / 1e-5 (tests)\n");
  std::printf(
      "# (scaled coordinates is exact where m = 1/n is a power of 4, k = m^-1/2 a power of two: n = 1024, 16384)\n");
  std::printf("%7s %6s  %-24s %10s %10s %10s\n", "n", "eps", "form, instructions", "max_rel", "median", "momentum");
  for (double eps : {0.01, 0.05}) {
    for (std::size_t n : {257u, 1000u, 1024u, 4099u, 16384u}) {
      const Bodies b = nbody::make_plummer(n, 300 + n);
      const auto ref = nbody::reference_accelerations(b, 1.0, eps);
      for (Form f : {Form::tuned, Form::equal_mass_fold, Form::scaled_coordinates, Form::expanded_r2}) {
        const Accel a = evaluate(b, float(eps * eps), f);
        const auto e = nbody::compare_accelerations(ref, a.x, a.y, a.z);
        std::printf("%7zu %6.2f  %-24s %10.2e %10.2e %10.2e\n", n, eps, form_name(f), e.max_rel, e.median_rel,
                    nbody::momentum_balance(b, a.x, a.y, a.z));
      }
    }
  }
  return 0;
}

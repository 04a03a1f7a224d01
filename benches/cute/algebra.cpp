// CuTe C++ timings of the expressions `cargo bench --bench algebra` times in tessel, with run-time
// integers (plain `int`, opaque to the compiler), for scripts/algebra-vs-cute.sh.
//
// Where CuTe refuses run-time strides (a complement of rank > 1, and so a product whose block, or
// a divide whose tiler, has rank > 1), the strides are static (`Int<N>`) and the shapes run-time;
// the name then ends in " [static strides]" and C++ does that part of the work at compile time.
//
// Prints one line per expression: its name, a tab, the median ns per call.
#include <cute/layout.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace cute;

// A run-time value the compiler cannot see through.
static inline int rt(int v) {
  asm volatile("" : "+r"(v));
  return v;
}

// Keeps a result alive without reading it.
template <class T>
static inline void keep(T const& x) {
  asm volatile("" : : "r"(&x) : "memory");
}

// Median ns per call over 21 samples of ~2 ms each.
template <class F>
static double time_ns(F f) {
  using clk = std::chrono::steady_clock;
  long n = 1;
  for (;;) {
    auto t0 = clk::now();
    for (long i = 0; i < n; ++i) f();
    double s = std::chrono::duration<double>(clk::now() - t0).count();
    if (s > 2e-3) break;
    n *= 2;
  }
  std::vector<double> v;
  for (int k = 0; k < 21; ++k) {
    auto t0 = clk::now();
    for (long i = 0; i < n; ++i) f();
    v.push_back(std::chrono::duration<double, std::nano>(clk::now() - t0).count() / n);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static void report(char const* name, double ns) { std::printf("%s\t%.2f\n", name, ns); }

int main() {
  report("make_layout 4:2 (the smallest result)", time_ns([] {
    keep(make_layout(rt(4), rt(2)));
  }));
  report("composition (6,2):(8,2) o (4,3):(3,1)", time_ns([] {
    auto a = make_layout(make_shape(rt(6), rt(2)), make_stride(rt(8), rt(2)));
    auto b = make_layout(make_shape(rt(4), rt(3)), make_stride(rt(3), rt(1)));
    keep(composition(a, b));
  }));
  report("composition by mode, rank-2 depth-2", time_ns([] {
    auto a = make_layout(make_shape(make_shape(rt(8), rt(16)), make_shape(rt(32), rt(4))),
                         make_stride(make_stride(rt(1), rt(8)), make_stride(rt(128), rt(4096))));
    auto t = make_tile(make_layout(make_shape(rt(4), rt(8)), make_stride(rt(1), rt(4))),
                       make_layout(make_shape(rt(8), rt(4)), make_stride(rt(4), rt(1))));
    keep(composition(a, t));
  }));
  report("complement 4:2 24", time_ns([] {
    keep(complement(make_layout(rt(4), rt(2)), rt(24)));
  }));
  report("complement (2,2):(1,6) 24 [static strides]", time_ns([] {
    auto a = make_layout(make_shape(rt(2), rt(2)), make_stride(Int<1>{}, Int<6>{}));
    keep(complement(a, rt(24)));
  }));
  report("coalesce ((2,4),(3,5)):((1,2),(8,24))", time_ns([] {
    auto a = make_layout(make_shape(make_shape(rt(2), rt(4)), make_shape(rt(3), rt(5))),
                         make_stride(make_stride(rt(1), rt(2)), make_stride(rt(8), rt(24))));
    keep(coalesce(a));
  }));
  report("logical_divide (4,2,3):(2,1,8) / 4:2", time_ns([] {
    auto a = make_layout(make_shape(rt(4), rt(2), rt(3)), make_stride(rt(2), rt(1), rt(8)));
    keep(logical_divide(a, make_layout(rt(4), rt(2))));
  }));
  report("zipped_divide (9,(4,8)):(59,(13,1)) / <3:3,(2,4):(1,8)> [static strides]", time_ns([] {
    auto a = make_layout(make_shape(rt(9), make_shape(rt(4), rt(8))),
                         make_stride(rt(59), make_stride(rt(13), rt(1))));
    auto t = make_tile(make_layout(rt(3), Int<3>{}),
                       make_layout(make_shape(rt(2), rt(4)), make_stride(Int<1>{}, Int<8>{})));
    keep(zipped_divide(a, t));
  }));
  report("zipped_divide 8192x8192 by <32,32>", time_ns([] {
    auto m = make_layout(make_shape(rt(8192), rt(8192)), make_stride(rt(8192), rt(1)));
    keep(zipped_divide(m, make_tile(rt(32), rt(32))));
  }));
  auto products = [](char const* name, auto f) {
    report(name, time_ns([f] {
      auto blk = make_layout(make_shape(rt(2), rt(5)), make_stride(Int<5>{}, Int<1>{}));
      auto grid = make_layout(make_shape(rt(3), rt(4)), make_stride(rt(1), rt(3)));
      keep(f(blk, grid));
    }));
  };
  products("logical_product (2,5):(5,1) x (3,4):(1,3) [static strides]",
           [](auto const& a, auto const& b) { return logical_product(a, b); });
  products("blocked_product (2,5):(5,1) x (3,4):(1,3) [static strides]",
           [](auto const& a, auto const& b) { return blocked_product(a, b); });
  products("raked_product (2,5):(5,1) x (3,4):(1,3) [static strides]",
           [](auto const& a, auto const& b) { return raked_product(a, b); });
  report("evaluate a 1-D coordinate of a zipped 8192x8192", time_ns([] {
    auto m = make_layout(make_shape(8192, 8192), make_stride(8192, 1));
    static auto const z = zipped_divide(m, make_tile(32, 32));
    auto zd = make_layout(make_shape(make_shape(rt(32), rt(32)), make_shape(rt(256), rt(256))),
                          make_stride(make_stride(rt(8192), rt(1)), make_stride(rt(262144), rt(32))));
    (void)z;
    int r = zd(rt(123457));
    asm volatile("" : : "r"(r));
  }));
  return 0;
}

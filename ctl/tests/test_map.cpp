// Stripe math (kmod/fxblk_map.h) against a naive reference model that lays
// the volume out by walking it sector by sector, on randomized geometries.
#include <doctest/doctest.h>

#include "fxblk_map.h"

#include <cstdint>
#include <tuple>
#include <random>
#include <vector>

namespace {

struct Place {
	__u32 member;
	__u64 msector;
	bool operator==(const Place &) const = default;
};

// The layout by definition: fill chunk after chunk, member 0..N-1 in turn,
// each member's chunks back to back. No division, no shifts.
std::vector<Place> walk(__u64 chunk, __u32 n, __u64 rows)
{
	std::vector<Place> v;
	v.reserve(chunk * n * rows);
	std::vector<__u64> next(n, 0);  // next free sector per member
	for (__u64 r = 0; r < rows; ++r)
		for (__u32 m = 0; m < n; ++m)
			for (__u64 k = 0; k < chunk; ++k)
				v.push_back({m, next[m]++});
	return v;
}

Place map(const fxblk_geom &g, __u64 s)
{
	Place p{};
	fxblk_map_sector(&g, s, &p.member, &p.msector);
	return p;
}

struct Geometry {
	fxblk_geom g;
	__u64 chunk, rows;
	std::vector<Place> model;
};

// Random geometry: chunk 8..32768 sectors, 1..16 members, a few stripe rows
// (at least two, so row wrap-around is covered), model capped at ~1M
// sectors to stay fast under ASan.
// Geometries 0..3 pin the extremes (chunk 8 and 32768 sectors x 1 and 16
// members) so they are always covered.
Geometry random_geometry(std::mt19937_64 &rng, int nth)
{
	static const std::pair<__u32, __u32> corners[] = {{3, 1}, {3, 16}, {15, 1}, {15, 16}};
	auto c = static_cast<unsigned>(nth);
	__u32 shift = std::uniform_int_distribution<__u32>(3, 15)(rng);
	__u32 n = std::uniform_int_distribution<__u32>(1, 16)(rng);
	if (c < 4)
		std::tie(shift, n) = corners[c];
	__u64 chunk = 1ULL << shift;
	__u64 max_rows = std::max<__u64>(2, (1ULL << 20) / (chunk * n));
	__u64 rows =
		std::uniform_int_distribution<__u64>(2, std::min<__u64>(max_rows, 9))(rng);
	Geometry geo{{shift, n, rows * chunk}, chunk, rows, walk(chunk, n, rows)};
	return geo;
}

std::string describe(const Geometry &geo)
{
	return "chunk " + std::to_string(geo.chunk) + " members " +
	       std::to_string(geo.g.nr_members) + " rows " + std::to_string(geo.rows);
}

constexpr int geometries = 48;

}  // namespace

TEST_CASE("reference model sanity")
{
	// 2 members, chunk 8: sectors 0-7 on m0, 8-15 on m1, 16-23 on m0 at 8.
	auto v = walk(8, 2, 2);
	REQUIRE(v.size() == 32);
	CHECK(v[0] == Place{0, 0});
	CHECK(v[8] == Place{1, 0});
	CHECK(v[17] == Place{0, 9});
	CHECK(v[31] == Place{1, 15});
}

TEST_CASE("capacity and rounding")
{
	fxblk_geom g{10, 4, 5 * 1024};
	CHECK(fxblk_chunk_sectors(&g) == 1024);
	CHECK(fxblk_capacity(&g) == 4 * 5 * 1024);
	CHECK(fxblk_round_member(5 * 1024 + 1023, 10) == 5 * 1024);
	CHECK(fxblk_round_member(1023, 10) == 0);
	CHECK(fxblk_round_member(2086912, 10) == 2086912);  // 1 GiB member, 4M+1M off
	CHECK(fxblk_round_member(2086913, 3) == 2086912);
}

TEST_CASE("fxblk_map_sector matches the walk on random geometries")
{
	std::mt19937_64 rng(0xf7b1c0de);
	for (int i = 0; i < geometries; ++i) {
		Geometry geo = random_geometry(rng, i);
		INFO(describe(geo));
		__u64 cap = fxblk_capacity(&geo.g);
		REQUIRE(cap == geo.model.size());
		// Every sector of small volumes, a sample of large ones, always
		// the first and last sector.
		__u64 step = cap <= 65536 ? 1 : cap / 20011 + 1;
		for (__u64 s = 0; s < cap; s += step)
			REQUIRE(map(geo.g, s) == geo.model[s]);
		REQUIRE(map(geo.g, cap - 1) == geo.model[cap - 1]);
	}
}

TEST_CASE("mapping is periodic far into large volumes")
{
	// The walk covers the first rows; the layout repeats every stripe
	// row, so sector s + k*rowlen maps to (member, msector + k*chunk).
	std::mt19937_64 rng(42);
	for (int i = 0; i < geometries; ++i) {
		Geometry geo = random_geometry(rng, i);
		INFO(describe(geo));
		__u64 row = geo.chunk * geo.g.nr_members;
		for (__u64 k : {1ULL << 20, 123456789ULL, (1ULL << 40) / row}) {
			std::uniform_int_distribution<__u64> pick(0, geo.model.size() - 1);
			__u64 s = pick(rng);
			Place want = geo.model[s];
			want.msector += k * geo.chunk;
			CHECK(map(geo.g, s + k * row) == want);
		}
	}
}

TEST_CASE("bios split at chunk boundaries land contiguously on one member")
{
	std::mt19937_64 rng(7);
	for (int i = 0; i < geometries; ++i) {
		Geometry geo = random_geometry(rng, i);
		INFO(describe(geo));
		__u64 cap = fxblk_capacity(&geo.g);
		__u64 row = geo.chunk * geo.g.nr_members;
		std::vector<std::pair<__u64, __u64>> bios;  // start, len
		std::uniform_int_distribution<__u64> pos(0, cap - 1);
		for (int b = 0; b < 40; ++b) {
			__u64 s = pos(rng);
			__u64 max_len = std::min<__u64>(cap - s, 3 * geo.chunk);
			bios.push_back({s, std::uniform_int_distribution<__u64>(1, max_len)(rng)});
		}
		// Chunk-crossing: straddle a boundary by one sector each side.
		if (cap > geo.chunk)
			bios.push_back({geo.chunk - 1, 2});
		// Whole-stripe I/O: one full row, aligned, and the last row.
		bios.push_back({0, row});
		bios.push_back({cap - row, row});
		// The entire volume.
		bios.push_back({0, cap});

		for (auto [start, len] : bios) {
			INFO("bio " << start << "+" << len);
			__u64 s = start, end = start + len, pieces = 0;
			while (s < end) {
				__u64 piece = std::min(fxblk_sectors_to_boundary(&geo.g, s), end - s);
				REQUIRE(piece >= 1);
				REQUIRE(piece <= geo.chunk);
				Place p = map(geo.g, s);
				// Model: every sector of the piece is on the same member,
				// at consecutive member sectors.
				for (__u64 k = 0; k < piece; k += (piece > 64 ? piece / 64 : 1))
					REQUIRE(geo.model[s + k] == Place{p.member, p.msector + k});
				REQUIRE(geo.model[s + piece - 1] ==
					Place{p.member, p.msector + piece - 1});
				// A piece ends at the bio's end or exactly where the
				// model moves to another member.
				// (With one member the next chunk is contiguous: then
				// check that the piece stopped at a chunk boundary.)
				if (s + piece < end && geo.g.nr_members > 1)
					REQUIRE(geo.model[s + piece].member != p.member);
				if (s + piece < end && geo.g.nr_members == 1)
					REQUIRE((s + piece) % geo.chunk == 0);
				s += piece;
				++pieces;
			}
			REQUIRE(s == end);
			__u64 first = start / geo.chunk, last = (end - 1) / geo.chunk;
			CHECK(pieces == last - first + 1);
		}
	}
}

TEST_CASE("fxblk_map_range gives each member its share of a range")
{
	std::mt19937_64 rng(1234);
	for (int i = 0; i < geometries; ++i) {
		Geometry geo = random_geometry(rng, i);
		INFO(describe(geo));
		__u64 cap = fxblk_capacity(&geo.g);
		std::uniform_int_distribution<__u64> pos(0, cap);
		std::vector<std::pair<__u64, __u64>> ranges = {
			{0, cap}, {0, 1}, {cap - 1, cap}, {0, geo.chunk * geo.g.nr_members}};
		for (int r = 0; r < 12; ++r) {
			__u64 a = pos(rng), b = pos(rng);
			ranges.push_back({std::min(a, b), std::max(a, b)});
		}
		for (auto [start, end] : ranges) {
			if (end - start > (1ULL << 18))
				continue;  // keep the per-sector model walk cheap
			INFO("range [" << start << ", " << end << ")");
			// Model: per member, the member sectors the range touches.
			std::vector<__u64> lo(geo.g.nr_members, UINT64_MAX), hi(geo.g.nr_members, 0),
				count(geo.g.nr_members, 0);
			for (__u64 s = start; s < end; ++s) {
				Place p = geo.model[s];
				lo[p.member] = std::min(lo[p.member], p.msector);
				hi[p.member] = std::max(hi[p.member], p.msector + 1);
				++count[p.member];
			}
			for (__u32 m = 0; m < geo.g.nr_members; ++m) {
				__u64 ms, me;
				fxblk_map_range(&geo.g, start, end, m, &ms, &me);
				INFO("member " << m);
				if (!count[m]) {
					CHECK(ms == me);
				} else {
					// Contiguous on the member: exactly [lo, hi).
					CHECK(hi[m] - lo[m] == count[m]);
					CHECK(ms == lo[m]);
					CHECK(me == hi[m]);
				}
			}
		}
	}
}

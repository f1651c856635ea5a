// One print path: every command builds a JSON document from decoded data;
// -o json prints it, text output is rendered from the same document.
// Keys keep the order they are built in (ordered_json): identity first,
// then health, geometry, members, counters.
#pragma once

#include "label.hpp"
#include "doctor.hpp"
#include "fabrics.hpp"
#include "model.hpp"

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fxctl {

using json = nlohmann::ordered_json;

// 2: health (state, flags, errors, paths), stats in bytes with a timestamp
// and interval figures, errors as {"error": {...}} objects.
constexpr int schema_version = 2;

json volume_json(const Volume &v);
// {"capable": bool, or null from a module that does not say; "reason": why
// not (names the members that refuse), or null}
json p2pdma_json(const Volume &v);
// An event: "event" (created, destroyed, member_error, member_state,
// eventN if unknown), "volume" {name, index, disk} and, for member events,
// "member" {index, disk, state, errors, errno, errno_name}.
json event_json(const Event &ev);
// monitor -o json, one per line: schema_version, timestamp (seconds since
// the epoch, as stats), then event_json's keys.
json event_doc(const Event &ev, double timestamp);
// @st absent: the module is not loaded ("module": null).
json version_doc(const std::optional<ModuleStatus> &st);
json volume_doc(const Volume &v);  // show, create, remove
json list_doc(const std::vector<Volume> &vols);
// stats: counters in bytes, @timestamp in seconds since the epoch.
json stats_doc(const Volume &v, double timestamp);
// Adds rates and interval latency quantiles against @prev, measured
// @seconds earlier. Returns false (and adds nothing) when the two samples do
// not describe the same volume layout (re-created meanwhile).
bool add_interval(json &doc, const json &prev, double seconds);
json error_doc(const std::string &message, int code, int err);
// One member's NVMe identity as examine shows it: nsid, subsys_nqn, nguid,
// uuid, eui64 (identifiers as hex, "" if absent), after the keys of @into.
json member_id_json(const label::MemberId &m, json into = json::object());
// examine DEV: "device", "member" (bool), "label_source" (primary, backup or
// null), "primary"/"backup" {valid, blank, reason}, "label" (null if none):
// format_version, volume_uuid, volume_name, member_index, member_count,
// generation, created (seconds since the epoch), chunk_bytes,
// data_offset_bytes, data_bytes (per member), capacity_bytes, members [{index,
// nsid, subsys_nqn, nguid, uuid, eui64}] (identifiers as hex, "" if absent),
// owner (host NQN, null if none); "reused": why the device is a reused
// disk and not a member (@reused, assembly_plan.hpp reuse_reason), or null.
json examine_doc(const std::string &device, const label::MemberLabel &ml,
		 const std::string &reused = "");

std::vector<std::string> feature_names(std::uint64_t features);
std::vector<std::string> volume_flag_names(std::uint64_t flags);
// "live", "failing", "gone"; "unknown" when the module did not say.
std::string state_name(const std::optional<std::uint32_t> &state);
// Nearest-rank quantile (@permille: 500 = p50, 990 = p99) of a log2
// histogram: the index of the bucket holding it, none if the histogram is
// empty.
std::optional<std::size_t> quantile_bucket(const std::vector<std::uint64_t> &hist,
					   unsigned permille);

std::string text_version(const json &doc);
std::string text_volume(const json &doc);  // show
std::string text_created(const json &doc);
std::string text_removed(const json &doc);
std::string text_examine(const json &doc);
// examine --export: KEY=VALUE lines for udev's IMPORT{program}; nothing for
// a non-member; FXBLK_REUSED=1 for a reused disk.
std::string export_examine(const json &doc);
// One line: "2026-12-01T12:00:00Z member-error vol1 (fx0) member 1 nvme1n1:
// error -5 (EIO), failing".
std::string text_event(const json &doc);
std::string iso_time(double epoch);  // UTC, whole seconds
std::string text_list(const json &doc);
// Totals, or rates and interval quantiles when @doc carries an interval.
std::string text_stats(const json &doc);

// connect, connect-all: {"connections": [{subsysnqn, transport, traddr,
// trsvcid, hostnqn, status (connected, already-connected, failed),
// controller, state, attempts, error, errno_name}]}.
json connect_doc(const std::vector<ConnectResult> &results);
std::string text_connect(const json &doc);
json discovery_doc(const FabricTarget &t, const std::vector<DiscoveryEntry> &entries);
std::string text_discovery(const json &doc);
json disconnect_doc(const std::vector<Controller> &ctrls);
std::string text_disconnect(const json &doc);
// doctor: summary {errors, warnings}, findings [{severity, check, message,
// fix}], then the facts: rdma, modules, host, multipath, controllers, volumes.
json doctor_doc(const DoctorFacts &f, const std::vector<Finding> &findings);
std::string text_doctor(const json &doc);

}  // namespace fxctl

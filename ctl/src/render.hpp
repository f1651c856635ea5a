// One print path: every command builds a JSON document from decoded data;
// -o json prints it, text output is rendered from the same document.
#pragma once

#include "model.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fxctl {

using json = nlohmann::json;

constexpr int schema_version = 1;

json volume_json(const Volume &v);
json version_doc(const ModuleStatus &st);
json volume_doc(const Volume &v);  // show, create, remove, stats
json list_doc(const std::vector<Volume> &vols);
std::vector<std::string> feature_names(std::uint64_t features);

std::string text_version(const json &doc);
std::string text_volume(const json &doc);  // show
std::string text_created(const json &doc);
std::string text_removed(const json &doc);
std::string text_list(const json &doc);
// Totals; with @prev (the previous sample, @seconds earlier) rates instead.
std::string text_stats(const json &doc, const json *prev = nullptr, double seconds = 0);

}  // namespace fxctl

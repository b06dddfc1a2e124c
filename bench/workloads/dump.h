// `workloads --dump-inputs DIR`: every workload's inputs as .npy files and a manifest, so that the
// peer scripts of bench/peers/ (jax, PyTorch) compute exactly what lanes computes.
//
// Layout (the peers' contract; bench/peers/README.md describes it too):
//   DIR/manifest.json            {"format": 1, "workloads": {NAME: {"inputs": [...], "params":
//   {...}}}} DIR/NAME/INPUT.npy           one file per input leaf, C order, little endian
// Each input of the manifest is {"name", "file" (relative to DIR), "dtype" (numpy's spelling),
// "shape"}; "params" holds the numbers that are not arrays (thresholds, tolerances, step counts).
// A workload's setup() names its inputs with inputs() and its numbers with param() (harness.h);
// both do nothing outside a dump.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"

namespace workloads {

/// numpy's type string of a lanes dtype (all little endian on the machines lanes runs on).
inline const char* npy_descr(lanes::DType d) {
  switch (d) {
    case lanes::DType::Bool:
      return "|b1";
    case lanes::DType::UInt8:
      return "|u1";
    case lanes::DType::Int32:
      return "<i4";
    case lanes::DType::Int64:
      return "<i8";
    case lanes::DType::Float32:
      return "<f4";
    case lanes::DType::Float64:
      return "<f8";
  }
  return "";
}

/// Writes `t` as an .npy file (format 1.0: magic, header length, a Python dict literal padded to
/// a multiple of 64 bytes, then the raw C-order data).
inline void write_npy(const std::filesystem::path& path, const Tensor& t) {
  std::string shape = "(";  // a Python tuple: "()", "(3,)", "(3, 4)"
  for (size_t i = 0; i < t.shape().size(); ++i)
    shape += (i ? ", " : "") + std::to_string(t.shape()[i]);
  shape += t.shape().size() == 1 ? ",)" : ")";
  std::string header = std::string("{'descr': '") + npy_descr(t.dtype()) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t unpadded = 10 + header.size() + 1;  // magic 6, version 2, length 2, "\n"
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw lanes::Error("--dump-inputs: cannot write " + path.string());
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  const char len_bytes[2] = {char(len & 0xff), char(len >> 8)};
  f.write(len_bytes, 2);
  f << header;
  const Tensor c = t.contiguous();
  f.write(static_cast<const char*>(c.raw_data()),
          static_cast<std::streamsize>(c.numel() * lanes::dtype_size(c.dtype())));
  if (!f) throw lanes::Error("--dump-inputs: failed writing " + path.string());
}

inline std::string json_shape(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

/// Runs each workload's setup() with the log on and writes its inputs and the manifest.
inline void dump_inputs(const std::filesystem::path& dir, const std::vector<Workload>& selected) {
  std::filesystem::create_directories(dir);
  std::string manifest = "{\"format\": 1, \"workloads\": {";
  for (size_t w = 0; w < selected.size(); ++w) {
    InputLog log;
    input_log() = &log;
    try {
      (void)selected[w].setup();  // the variants are dropped unrun
    } catch (...) {
      input_log() = nullptr;
      throw;
    }
    input_log() = nullptr;
    const std::string& name = selected[w].name;
    std::filesystem::create_directories(dir / name);
    manifest += std::string(w ? "," : "") + "\n  \"" + name + "\": {\"inputs\": [";
    for (size_t i = 0; i < log.tensors.size(); ++i) {
      const auto& [input_name, t] = log.tensors[i];
      const std::string file = name + "/" + input_name + ".npy";
      write_npy(dir / file, t);
      manifest += std::string(i ? ", " : "") + "{\"name\": \"" + input_name + "\", \"file\": \"" +
                  file + "\", \"dtype\": \"" + lanes::dtype_name(t.dtype()) +
                  "\", \"shape\": " + json_shape(t.shape()) + "}";
    }
    manifest += "], \"params\": {";
    for (size_t i = 0; i < log.params.size(); ++i) {
      char number[64];
      std::snprintf(number, sizeof number, "%.17g", log.params[i].second);
      manifest += std::string(i ? ", " : "") + "\"" + log.params[i].first + "\": " + number;
    }
    manifest += "}}";
  }
  manifest += "\n}}\n";
  std::ofstream f(dir / "manifest.json");
  f << manifest;
  if (!f) throw lanes::Error("--dump-inputs: cannot write " + (dir / "manifest.json").string());
}

}  // namespace workloads

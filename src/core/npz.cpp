// .npz = a zip archive of .npy entries. We read stored and deflated entries (zip64 included, as
// numpy writes with force_zip64) taking sizes from the central directory, and write stored entries.
#include <zlib.h>

#include <cstring>
#include <limits>

#include "core/atomic_file.h"
#include "core/npy.h"

namespace lockstep {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kMaxEntryBytes = uint64_t{1} << 40;  // same cap as Tensor
constexpr uint64_t kMaxDeflateRatio = 1032;             // zlib's documented worst-case expansion

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw Error(ErrorCode::InvalidModel, "malformed .npz '" + path + "': " + why);
}

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& path) : bytes_(bytes), path_(path) {}
  uint64_t le(size_t offset, int width) const {
    if (offset > bytes_.size() || bytes_.size() - offset < static_cast<size_t>(width)) bad(path_, "truncated archive");
    uint64_t v = 0;
    for (int i = 0; i < width; ++i) v |= uint64_t{static_cast<uint8_t>(bytes_[offset + i])} << (8 * i);
    return v;
  }
  std::string_view slice(uint64_t offset, uint64_t size) const {
    if (offset > bytes_.size() || bytes_.size() - offset < size) bad(path_, "entry runs past the end of the file");
    return bytes_.substr(offset, size);
  }
  size_t size() const { return bytes_.size(); }

 private:
  std::string_view bytes_;
  const std::string& path_;
};

struct Entry {
  std::string name;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0, uncompressed = 0, local_offset = 0;
};

// Replaces 0xFFFFFFFF fields with the values in the zip64 extra field (id 1), in the order the spec gives.
void apply_zip64_extra(const Reader& r, size_t extra, size_t extra_len, Entry& e, const std::string& path) {
  size_t pos = extra, end = extra + extra_len;
  while (pos + 4 <= end) {
    uint64_t id = r.le(pos, 2), len = r.le(pos + 2, 2);
    if (pos + 4 + len > end) bad(path, "bad extra field in '" + e.name + "'");
    if (id == 1) {
      size_t q = pos + 4, qend = q + len;
      auto take = [&](uint64_t& field) {
        if (field != 0xFFFFFFFFu) return;
        if (q + 8 > qend) bad(path, "short zip64 extra field in '" + e.name + "'");
        field = r.le(q, 8);
        q += 8;
      };
      take(e.uncompressed);
      take(e.compressed);
      take(e.local_offset);
    }
    pos += 4 + len;
  }
}

std::string inflate_raw(std::string_view in, uint64_t out_size, const Entry& e, const std::string& path) {
  std::string out(out_size, '\0');
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw Error(ErrorCode::Internal, "zlib inflateInit2 failed");
  // Feed in chunks of at most uInt size; the output buffer is exactly the declared size.
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = 0;
  size_t in_pos = 0, out_pos = 0;
  int rc = Z_OK;
  constexpr size_t kChunk = 1 << 30;
  while (rc == Z_OK) {
    if (zs.avail_in == 0 && in_pos < in.size()) {
      size_t n = std::min(kChunk, in.size() - in_pos);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_pos));
      zs.avail_in = static_cast<uInt>(n);
      in_pos += n;
    }
    if (zs.avail_out == 0 && out_pos < out.size()) {
      size_t n = std::min(kChunk, out.size() - out_pos);
      zs.next_out = reinterpret_cast<Bytef*>(out.data() + out_pos);
      zs.avail_out = static_cast<uInt>(n);
      out_pos += n;
    }
    uInt before_in = zs.avail_in, before_out = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR || (rc == Z_OK && before_in == zs.avail_in && before_out == zs.avail_out)) break;
  }
  bool done = rc == Z_STREAM_END && zs.total_out == out_size;
  inflateEnd(&zs);
  if (!done) bad(path, "entry '" + e.name + "' does not inflate to its declared size");
  return out;
}

std::vector<Entry> central_directory(const Reader& r, const std::string& path) {
  // The end record sits in the last 22 + 65535 bytes (its comment is at most 65535 bytes).
  if (r.size() < 22) bad(path, "too short to be a zip archive");
  size_t lowest = r.size() > 22 + 65535 ? r.size() - 22 - 65535 : 0;
  size_t end = std::string::npos;
  for (size_t p = r.size() - 22 + 1; p-- > lowest;)
    if (r.le(p, 4) == kEndSig) {
      end = p;
      break;
    }
  if (end == std::string::npos) bad(path, "no zip end-of-central-directory record (not an .npz file?)");
  uint64_t count = r.le(end + 10, 2), cd_size = r.le(end + 12, 4), cd_offset = r.le(end + 16, 4);
  if ((count == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_offset == 0xFFFFFFFFu) && end >= 20 &&
      r.le(end - 20, 4) == kZip64LocatorSig) {
    uint64_t z64 = r.le(end - 20 + 8, 8);
    if (r.le(z64, 4) != kZip64EndSig) bad(path, "bad zip64 end record");
    count = r.le(z64 + 32, 8);
    cd_size = r.le(z64 + 40, 8);
    cd_offset = r.le(z64 + 48, 8);
  }
  r.slice(cd_offset, cd_size);  // bounds check
  if (count > cd_size / 46) bad(path, "central directory entry count exceeds its size");
  std::vector<Entry> entries;
  size_t pos = cd_offset;
  for (uint64_t i = 0; i < count; ++i) {
    if (r.le(pos, 4) != kCentralSig) bad(path, "bad central directory entry " + std::to_string(i));
    Entry e;
    e.method = static_cast<uint16_t>(r.le(pos + 10, 2));
    e.crc = static_cast<uint32_t>(r.le(pos + 16, 4));
    e.compressed = r.le(pos + 20, 4);
    e.uncompressed = r.le(pos + 24, 4);
    size_t name_len = r.le(pos + 28, 2), extra_len = r.le(pos + 30, 2), comment_len = r.le(pos + 32, 2);
    e.local_offset = r.le(pos + 42, 4);
    e.name = std::string(r.slice(pos + 46, name_len));
    apply_zip64_extra(r, pos + 46 + name_len, extra_len, e, path);
    r.slice(pos + 46 + name_len, extra_len + comment_len);
    pos += 46 + name_len + extra_len + comment_len;
    entries.push_back(std::move(e));
  }
  return entries;
}

void put(std::string& out, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

std::map<std::string, Tensor> read_npz(const std::string& path) { return parse_npz(read_file(path), path); }

std::map<std::string, Tensor> parse_npz(std::string_view bytes, const std::string& path) {
  Reader r(bytes, path);
  std::map<std::string, Tensor> out;
  for (const Entry& e : central_directory(r, path)) {
    if (r.le(e.local_offset, 4) != kLocalSig) bad(path, "bad local header for '" + e.name + "'");
    uint64_t data = e.local_offset + 30 + r.le(e.local_offset + 26, 2) + r.le(e.local_offset + 28, 2);
    std::string_view stored = r.slice(data, e.compressed);
    if (e.uncompressed > kMaxEntryBytes) bad(path, "entry '" + e.name + "' is larger than 1 TiB");
    // Deflate expands at most ~1032:1; a larger declared size is a lie that would make us allocate.
    if (e.method == 8 && e.uncompressed > e.compressed * kMaxDeflateRatio + 1024)
      bad(path, "entry '" + e.name + "' declares " + std::to_string(e.uncompressed) + " bytes from " +
                    std::to_string(e.compressed) + " compressed, more than deflate can produce");
    std::string inflated;
    if (e.method == 0) {
      if (e.compressed != e.uncompressed) bad(path, "stored entry '" + e.name + "' has mismatched sizes");
    } else if (e.method == 8) {
      inflated = inflate_raw(stored, e.uncompressed, e, path);
      stored = inflated;
    } else {
      bad(path, "entry '" + e.name + "' uses compression method " + std::to_string(e.method) +
                    " (only stored and deflated are supported)");
    }
    uLong crc = crc32_z(0L, reinterpret_cast<const Bytef*>(stored.data()), stored.size());
    if (crc != e.crc) bad(path, "CRC mismatch in entry '" + e.name + "'");
    std::string key = e.name;
    if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    if (out.count(key)) bad(path, "duplicate entry '" + e.name + "'");
    out.emplace(key, parse_npy(stored, path + ":" + e.name));
  }
  return out;
}

void write_npz(const std::string& path, const std::map<std::string, Tensor>& tensors) {
  std::string out, central;
  for (const auto& [key, tensor] : tensors) {
    std::string name = key + ".npy";
    std::string body = encode_npy(tensor);
    if (body.size() >= 0xFFFFFFFFu || out.size() >= 0xFFFFFFFFu || name.size() > 0xFFFF)
      throw Error(ErrorCode::LimitExceeded, "write_npz '" + path + "': entry '" + key + "' too large for a zip32 archive");
    uint32_t crc = static_cast<uint32_t>(crc32_z(0L, reinterpret_cast<const Bytef*>(body.data()), body.size()));
    uint64_t offset = out.size();
    // Local header: version 20, no flags, stored, DOS time/date of 1980-01-01 for reproducible bytes.
    put(out, kLocalSig, 4), put(out, 20, 2), put(out, 0, 2), put(out, 0, 2), put(out, 0, 2), put(out, 0x21, 2);
    put(out, crc, 4), put(out, body.size(), 4), put(out, body.size(), 4), put(out, name.size(), 2), put(out, 0, 2);
    out += name;
    out += body;
    put(central, kCentralSig, 4), put(central, 20, 2), put(central, 20, 2), put(central, 0, 2), put(central, 0, 2);
    put(central, 0, 2), put(central, 0x21, 2), put(central, crc, 4), put(central, body.size(), 4);
    put(central, body.size(), 4), put(central, name.size(), 2), put(central, 0, 2), put(central, 0, 2);
    put(central, 0, 2), put(central, 0, 2), put(central, 0, 4), put(central, offset, 4);
    central += name;
  }
  if (tensors.size() > 0xFFFF || out.size() >= 0xFFFFFFFFu)
    throw Error(ErrorCode::LimitExceeded, "write_npz '" + path + "': archive too large for zip32");
  uint64_t cd_offset = out.size();
  out += central;
  put(out, kEndSig, 4), put(out, 0, 2), put(out, 0, 2), put(out, tensors.size(), 2), put(out, tensors.size(), 2);
  put(out, central.size(), 4), put(out, cd_offset, 4), put(out, 0, 2);
  write_file_atomic(path, out);
}

}  // namespace lockstep

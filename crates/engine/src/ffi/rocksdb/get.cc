// Point reads into one reused PinnableSlice, for RocksDB's C API handles.
//
// The C API's rocksdb_get_pinned_cf allocates a PinnableSlice per call and
// rocksdb_pinnableslice_destroy frees it; rocksdb_get_cf copies the value
// into a std::string and then into a malloc'd buffer. Under callgrind that
// costs about 240 instructions per read that db_bench, which reuses one
// PinnableSlice per thread, does not pay. A reader here is one
// PinnableSlice a session keeps; each read resets it and calls DB::Get.
//
// This is not engine code: it calls the public C++ API of Debian's
// librocksdb, through the C API's own handles. Each handle the C API hands
// out is a struct defined in RocksDB's db/c.cc whose first member is the
// C++ object or pointer it wraps (rocksdb_t { DB* rep; },
// rocksdb_readoptions_t { ReadOptions rep; ... },
// rocksdb_column_family_handle_t { ColumnFamilyHandle* rep; }), so a
// pointer to the handle points at that member. The layout is that of the
// library build.rs links (7.8.3); ampbench's tests read through both paths
// and compare. Another RocksDB's headers fail the build here (the
// static_assert below), and another library at run time is refused at
// open (ampbench_rocksdb_library_matches), instead of reading its handles
// as 7.8's.

#include <cstdlib>
#include <cstring>
#include <string>

#include <rocksdb/db.h>
#include <rocksdb/slice.h>
#include <rocksdb/version.h>

// The handle layout read below is db/c.cc's of RocksDB 7.8: check it
// again (and this assertion) before building against another release.
static_assert(ROCKSDB_MAJOR == 7 && ROCKSDB_MINOR == 8,
              "get.cc reads RocksDB 7.8's C API handle layout");

namespace {

rocksdb::DB* db_of(void* handle) { return *static_cast<rocksdb::DB**>(handle); }

const rocksdb::ReadOptions& read_options_of(const void* handle) {
  return *static_cast<const rocksdb::ReadOptions*>(handle);
}

rocksdb::ColumnFamilyHandle* cf_of(void* handle) {
  return *static_cast<rocksdb::ColumnFamilyHandle**>(handle);
}

// A malloc'd copy of the status text, freed by the caller with free().
char* message(const rocksdb::Status& s) {
  std::string m = s.ToString();
  char* out = static_cast<char*>(std::malloc(m.size() + 1));
  if (out != nullptr) {
    std::memcpy(out, m.c_str(), m.size() + 1);
  }
  return out;
}

}  // namespace

extern "C" {

// One thread's reader: the PinnableSlice every read reuses.
struct ampbench_rocksdb_reader {
  rocksdb::PinnableSlice value;
};

ampbench_rocksdb_reader* ampbench_rocksdb_reader_create() {
  return new ampbench_rocksdb_reader();
}

void ampbench_rocksdb_reader_destroy(ampbench_rocksdb_reader* r) { delete r; }

// Reads `key` from `cf` of `db` (rocksdb_t*, rocksdb_readoptions_t*,
// rocksdb_column_family_handle_t*). Returns 1 and sets *data and *len to
// the value, pinned in the reader until its next read or
// ampbench_rocksdb_reader_release; 0 when the key is absent; -1 with *err
// set to a malloc'd message on any other status.
int ampbench_rocksdb_reader_get(ampbench_rocksdb_reader* r, void* db,
                                const void* ro, void* cf, const char* key,
                                size_t keylen, const char** data, size_t* len,
                                char** err) {
  r->value.Reset();
  rocksdb::Status s = db_of(db)->Get(read_options_of(ro), cf_of(cf),
                                     rocksdb::Slice(key, keylen), &r->value);
  if (s.ok()) {
    *data = r->value.data();
    *len = r->value.size();
    return 1;
  }
  if (s.IsNotFound()) {
    return 0;
  }
  *err = message(s);
  return -1;
}

// 1 when the library loaded at run time is the very release (major,
// minor and patch) whose headers this file was compiled with, 0
// otherwise; the library's version ("7.8.3") is copied into buf (up to n
// bytes, NUL-terminated).
int ampbench_rocksdb_library_matches(char* buf, size_t n) {
  std::string v = rocksdb::GetRocksVersionAsString(true);
  if (n > 0) {
    size_t k = v.size() < n - 1 ? v.size() : n - 1;
    std::memcpy(buf, v.data(), k);
    buf[k] = 0;
  }
  std::string want = std::to_string(ROCKSDB_MAJOR) + "." +
                     std::to_string(ROCKSDB_MINOR) + "." +
                     std::to_string(ROCKSDB_PATCH);
  return v == want ? 1 : 0;
}

// The two ReadOptions flags this file reads through a C API read-options
// handle (rocksdb_readoptions_t*): fill_cache as bit 0 and
// verify_checksums as bit 1. Set through the C API and read back here,
// they show whether the handle's layout is the one assumed above.
int ampbench_rocksdb_readoptions_probe(const void* ro) {
  const rocksdb::ReadOptions& o = read_options_of(ro);
  return (o.fill_cache ? 1 : 0) | (o.verify_checksums ? 2 : 0);
}

}  // extern "C"

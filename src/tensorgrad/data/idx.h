/// \file
/// data/idx.h: the IDX file format (MNIST's: big-endian magic and dims, then unsigned bytes), gzip or
/// plain, and the MNIST-format datasets built on it. Every bad file throws IOError or DataError naming
/// the path and the byte offset. Generic datasets are in data/dataset.h, batching in data/loader.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensorgrad/data/dataset.h"

namespace tg {
namespace data {

/// The contents of an IDX file of unsigned bytes: its dims and its elements in row-major order.
struct IdxArray {
  /// The sizes from the header, outermost first.
  std::vector<int64_t> dims;
  /// The product of dims elements.
  std::vector<uint8_t> bytes;
};

/// Reads an IDX file of unsigned bytes (magic 0x000008RR, RR = rank) with exactly `rank` dims.
/// gzip files are decompressed (zlib); plain files are read as they are. A library built without zlib
/// reads plain files only and raises IOError for a gzip file ("built without zlib: gunzip the file or
/// rebuild with zlib1g-dev"). Memory grows with the bytes actually read, so a header that promises more
/// than the file holds cannot force a large allocation.
IdxArray read_idx(const std::string& path, int rank);
/// IDX images (magic 0x00000803) -> (N, 1, rows, cols) float32, pixel / 255 in [0, 1].
Tensor read_idx_images(const std::string& path);
/// IDX labels (magic 0x00000801) -> (N) int64; a label >= num_classes throws DataError naming the record.
Tensor read_idx_labels(const std::string& path, int64_t num_classes = 10);

/// Which part of a dataset to load.
enum class Split { Train, Test };
/** \var Split::Train
    The training set (train-*; 60,000 samples for MNIST). */
/** \var Split::Test
    The test set (t10k-*; 10,000 samples for MNIST). */

/// MNIST from `root` holding train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
/// t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (or the same names without .gz).
/// Samples: data (1, 28, 28) float32 in [0, 1], target 0-d int64 in [0, 10); batches (B, 1, 28, 28), (B).
class MNIST : public TensorDataset {
 public:
  /// Reads the split's two files from root; IOError names the missing folder or file, DataError a
  /// malformed file.
  MNIST(const std::string& root, Split split);
  /// The split this dataset holds.
  Split split() const { return split_; }

 protected:
  /// For datasets in MNIST's format: name is the dataset in error messages, missing_hint is added to
  /// the message when the files are not found.
  MNIST(const std::string& root, Split split, const char* name, const char* missing_hint);

 private:
  Split split_;
};

/// Fashion-MNIST: the same files and format as MNIST (Debian: apt-get install dataset-fashion-mnist,
/// into /usr/share/datasets/fashion-mnist). classes()[label] is the label's name.
class FashionMNIST : public MNIST {
 public:
  /// Reads the split from root; the IOError for missing files says how to install them.
  FashionMNIST(const std::string& root, Split split);
  /// The ten class names, "T-shirt/top" to "Ankle boot", indexed by label.
  static const std::vector<std::string>& classes();
};

}  // namespace data

namespace detail {
/// True when data::read_idx decompresses gzip files (the library was built with zlib).
bool idx_reads_gzip();
/// data::read_idx through the reader of a build without zlib (plain files; a gzip file raises
/// IOError), present in every build so that the suite checks that path wherever it runs.
data::IdxArray read_idx_plain(const std::string& path, int rank);
}  // namespace detail

}  // namespace tg

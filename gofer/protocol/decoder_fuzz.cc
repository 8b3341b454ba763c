// Fuzz target for the gofer message decoder.
//
// Input: byte 0 picks a decoder (the header or one message struct), the rest
// is the bytes to decode. Properties checked: decoding never crashes or
// reads out of bounds (ASan under libFuzzer), and whatever decodes is
// canonical: encoding it again gives back exactly the input.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gofer/protocol/codec.h"

namespace {

using gofer::Decode;
using gofer::EncodeToString;

template <typename T>
void Check(std::string_view in) {
  T msg;
  if (!Decode(in, &msg)) return;
  if (EncodeToString(msg) != in) std::abort();
}

void CheckHeader(std::string_view in) {
  gofer::Header h;
  if (gofer::DecodeHeader(in, &h) != 0) return;
  if (gofer::EncodeHeader(h) != in) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  using namespace gofer;  // NOLINT: a table of every message type.
  switch (data[0] % 37) {
    case 0:
      CheckHeader(in);
      break;
    case 1:
      Check<AttachReq>(in);
      break;
    case 2:
      Check<AttachResp>(in);
      break;
    case 3:
      Check<WalkReq>(in);
      break;
    case 4:
      Check<WalkResp>(in);
      break;
    case 5:
      Check<WalkStatReq>(in);
      break;
    case 6:
      Check<WalkStatResp>(in);
      break;
    case 7:
      Check<StatReq>(in);
      break;
    case 8:
      Check<StatResp>(in);
      break;
    case 9:
      Check<OpenReq>(in);
      break;
    case 10:
      Check<CreateReq>(in);
      break;
    case 11:
      Check<InodeResp>(in);
      break;
    case 12:
      Check<MkdirReq>(in);
      break;
    case 13:
      Check<MknodReq>(in);
      break;
    case 14:
      Check<SymlinkReq>(in);
      break;
    case 15:
      Check<LinkReq>(in);
      break;
    case 16:
      Check<ReadlinkReq>(in);
      break;
    case 17:
      Check<ReadlinkResp>(in);
      break;
    case 18:
      Check<UnlinkReq>(in);
      break;
    case 19:
      Check<RenameReq>(in);
      break;
    case 20:
      Check<SetAttrReq>(in);
      break;
    case 21:
      Check<GetdentsReq>(in);
      break;
    case 22:
      Check<GetdentsResp>(in);
      break;
    case 23:
      Check<StatfsReq>(in);
      break;
    case 24:
      Check<StatfsResp>(in);
      break;
    case 25:
      Check<FsyncReq>(in);
      break;
    case 26:
      Check<GetXattrReq>(in);
      break;
    case 27:
      Check<GetXattrResp>(in);
      break;
    case 28:
      Check<SetXattrReq>(in);
      break;
    case 29:
      Check<ListXattrReq>(in);
      break;
    case 30:
      Check<ListXattrResp>(in);
      break;
    case 31:
      Check<RemoveXattrReq>(in);
      break;
    case 32:
      Check<CloseReq>(in);
      break;
    case 33:
      Check<GetdentsPlusReq>(in);
      break;
    case 34:
      Check<GetdentsPlusResp>(in);
      break;
    case 35:
      Check<BindSocketReq>(in);
      break;
    case 36:
      Check<ConnectSocketReq>(in);
      break;
  }
  return 0;
}

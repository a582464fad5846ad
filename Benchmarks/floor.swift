// The least a Swift program can do to GET a URL with the system libcurl: dlopen it, initialise
// it, make one request to stdout, exit. Benchmarks/run.py builds it (`swiftc -O -static-stdlib`,
// as douctl's release build links the runtime) and runs it beside curl: the gap between the
// two is the Swift runtime's own start-up, a floor no code in douctl can go under.
#if canImport(Glibc)
import Glibc
#endif

typealias GlobalInit = @convention(c) (Int) -> Int32
typealias EasyInit = @convention(c) () -> OpaquePointer?
typealias SetString = @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>) -> Int32
typealias Perform = @convention(c) (OpaquePointer?) -> Int32

let curlOptionURL: Int32 = 10002
guard CommandLine.arguments.count == 2,
      let library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL),
      let globalInit = dlsym(library, "curl_global_init"), let easyInit = dlsym(library, "curl_easy_init"),
      let setString = dlsym(library, "curl_easy_setopt"), let perform = dlsym(library, "curl_easy_perform") else {
    exit(2)
}
_ = unsafeBitCast(globalInit, to: GlobalInit.self)(3)
let handle = unsafeBitCast(easyInit, to: EasyInit.self)()
_ = unsafeBitCast(setString, to: SetString.self)(handle, curlOptionURL, CommandLine.arguments[1])
exit(unsafeBitCast(perform, to: Perform.self)(handle))

#ifndef MEISHI_TASK_HOOK_H
#define MEISHI_TASK_HOOK_H

/// The Swift runtime's hook through which every job for the global concurrent executor is
/// enqueued (`swift_task_enqueueGlobal_hook`, swift/Runtime/Concurrency.h): nil until set.
///
/// The static Swift runtime (`make release`) keeps the symbol hidden, so swift-nio's
/// `NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor`,
/// which finds it with dlsym, cannot; a reference linked into the binary can. Linked shared
/// (`swift build`), the symbol comes from libswift_Concurrency.so.
void *_Nullable *_Nonnull meishi_task_enqueue_global_hook(void);

#endif

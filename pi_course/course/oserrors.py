"""An operating system's error said in Chinese: the reason a file or a port could not be used.

``OSError``'s own text is the C library's English (``[Errno 2] No such file or directory``); the
course's lines are Chinese throughout, so the usual reasons are said in Chinese, others as they are.
"""

from __future__ import annotations

import errno

_REASONS = {
    errno.ENOENT: "不存在",
    errno.EACCES: "没有权限",
    errno.EPERM: "不允许这样做",
    errno.EEXIST: "已经存在",
    errno.ENOTDIR: "路径里有一段不是文件夹",
    errno.EISDIR: "这是一个文件夹",
    errno.ENOSPC: "磁盘满了",
    errno.EROFS: "所在的文件系统只读",
    errno.EADDRINUSE: "端口已被占用",
    errno.EADDRNOTAVAIL: "这台机器没有这个地址",
    errno.ENAMETOOLONG: "名字太长",
}


def reason(error: BaseException) -> str:
    """Why ``error`` happened, in one short Chinese phrase where the reason is a usual one."""
    if isinstance(error, OSError) and error.errno in _REASONS:
        return _REASONS[error.errno]
    if isinstance(error, UnicodeDecodeError):
        return "不是 UTF-8 编码的文本"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error)

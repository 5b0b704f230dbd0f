"""pools.py - host KV pools laid out as SGLang's are, for tests without SGLang.

MHAPool is MHATokenToKVPoolHost's memory: kv_buffer (2, size, layer_num, head_num,
head_dim) in page_first (K at [0], V at [1]; a page is page_size consecutive tokens),
(2, layer_num, size, head_num, head_dim) in layer_first; get_page_buffer_meta gives
per page the K object then the V object, each all layers of the page's tokens, as
SGLang's does. MLAPool is MLATokenToKVPoolHost's: kv_buffer (size, layer_num, 1,
kv_cache_dim), one object per page. Only what a storage backend touches is here.
"""
import torch


def _itemsize(dtype):
    return torch.empty(0, dtype=dtype).element_size()


class _DevicePool:
    """The device pool a host pool mirrors: its dtype is the KV format (SGLang's
    host pool stores fp8 formats as uint8 and keeps the device pool)."""

    def __init__(self, dtype):
        self.dtype = dtype


class _Pool:
    def __init__(self, pages, page_size, layer_num, dtype, layout, kv_dtype=None):
        if kv_dtype is not None:
            self.device_pool = _DevicePool(kv_dtype)
        self.page_size = page_size
        self.size = pages * page_size
        self.layer_num = layer_num
        self.dtype = dtype
        self.itemsize = _itemsize(dtype)
        self.layout = layout
        self.start_layer, self.end_layer = 0, layer_num

    def indices(self, pages):
        """Host indices of the given page numbers (what SGLang passes: page_size
        consecutive token slots a page)."""
        return torch.cat([torch.arange(p * self.page_size, (p + 1) * self.page_size)
                          for p in pages]) if pages else torch.empty(0, dtype=torch.int64)

    def get_hybrid_pool_buffer(self):
        return [self.kv_buffer]

    def fill(self, seed):
        """Deterministic content per seed (bytes of every element)."""
        g = torch.Generator().manual_seed(seed)
        raw = self.kv_buffer.view(torch.uint8)
        raw.copy_(torch.randint(0, 256, raw.shape, generator=g, dtype=torch.uint8))


class MHAPool(_Pool):
    def __init__(self, pages=16, page_size=4, layer_num=4, head_num=2, head_dim=128,
                 dtype=torch.bfloat16, layout="page_first", kv_dtype=None):
        super().__init__(pages, page_size, layer_num, dtype, layout, kv_dtype)
        self.head_num, self.head_dim = head_num, head_dim
        if layout == "page_first":
            dims = (2, self.size, layer_num, head_num, head_dim)
        elif layout == "layer_first":
            dims = (2, layer_num, self.size, head_num, head_dim)
        else:
            raise ValueError(layout)
        self.kv_buffer = torch.zeros(dims, dtype=dtype)

    def get_size_per_token(self):
        return 2 * self.layer_num * self.head_num * self.head_dim * self.itemsize

    def get_ksize_per_token(self):
        return self.get_size_per_token() // 2

    def token_bytes(self):
        return self.head_num * self.head_dim * self.itemsize

    def get_page_buffer_meta(self, indices):
        assert len(indices) % self.page_size == 0
        idx = indices.tolist()
        base = self.kv_buffer.data_ptr()
        half = self.kv_buffer[0].numel() * self.itemsize   # V starts here
        tok = self.token_bytes()
        ptrs, sizes = [], []
        if self.layout == "page_first":
            obj = self.page_size * self.layer_num * tok
            for first in idx[::self.page_size]:
                k = base + first * self.layer_num * tok
                ptrs += [k, k + half]
                sizes += [obj, obj]
        else:  # layer_first: one object per layer and K/V
            obj = self.page_size * tok
            for first in idx[::self.page_size]:
                for layer in range(self.layer_num):
                    k = base + (layer * self.size + first) * tok
                    ptrs += [k, k + half]
                    sizes += [obj, obj]
        return ptrs, sizes

    def page(self, p):
        """A page's bytes: K then V (the objects get_page_buffer_meta names)."""
        s = slice(p * self.page_size, (p + 1) * self.page_size)
        if self.layout == "page_first":
            kv = self.kv_buffer[:, s]
        else:
            kv = self.kv_buffer[:, :, s]
        return kv.contiguous().view(torch.uint8).flatten().clone()

    def get_data_page(self, index, flat=True):
        s = slice(index, index + self.page_size)
        page = self.kv_buffer[:, s] if self.layout == "page_first" else self.kv_buffer[:, :, s]
        return page.flatten() if flat else page

    def get_dummy_flat_data_page(self):
        return torch.zeros(2 * self.page_size * self.layer_num * self.head_num * self.head_dim,
                           dtype=self.dtype)

    def set_from_flat_data_page(self, index, data_page):
        s = slice(index, index + self.page_size)
        if self.layout == "page_first":
            self.kv_buffer[:, s] = data_page.reshape(2, self.page_size, self.layer_num,
                                                     self.head_num, self.head_dim)
        else:
            self.kv_buffer[:, :, s] = data_page.reshape(2, self.layer_num, self.page_size,
                                                        self.head_num, self.head_dim)


class MLAPool(_Pool):
    def __init__(self, pages=16, page_size=4, layer_num=4, kv_lora_rank=512,
                 qk_rope_head_dim=64, dtype=torch.bfloat16, layout="page_first"):
        super().__init__(pages, page_size, layer_num, dtype, layout)
        assert layout == "page_first"
        self.kv_lora_rank, self.qk_rope_head_dim = kv_lora_rank, qk_rope_head_dim
        self.kv_cache_dim = kv_lora_rank + qk_rope_head_dim
        self.kv_buffer = torch.zeros((self.size, layer_num, 1, self.kv_cache_dim), dtype=dtype)

    def get_size_per_token(self):
        return self.kv_cache_dim * self.itemsize * self.layer_num

    get_ksize_per_token = get_size_per_token

    def get_page_buffer_meta(self, indices):
        assert len(indices) % self.page_size == 0
        per_token = self.get_size_per_token()
        base = self.kv_buffer.data_ptr()
        ptrs = [base + first * per_token for first in indices.tolist()[::self.page_size]]
        return ptrs, [per_token * self.page_size] * len(ptrs)

    def page(self, p):
        s = slice(p * self.page_size, (p + 1) * self.page_size)
        return self.kv_buffer[s].contiguous().view(torch.uint8).flatten().clone()

    def get_data_page(self, index, flat=True):
        page = self.kv_buffer[index:index + self.page_size]
        return page.flatten() if flat else page

    def get_dummy_flat_data_page(self):
        return torch.zeros(self.page_size * self.layer_num * self.kv_cache_dim, dtype=self.dtype)

    def set_from_flat_data_page(self, index, data_page):
        self.kv_buffer[index:index + self.page_size] = data_page.reshape(
            self.page_size, self.layer_num, 1, self.kv_cache_dim)

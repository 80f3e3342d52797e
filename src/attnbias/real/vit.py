"""A small vision transformer: non-overlapping patches → linear embedding, a learned [CLS] token
and position embeddings, then the same encoder blocks as the text model."""

from __future__ import annotations

import torch
from torch import nn

from .transformer import Encoder


class ViT(nn.Module):
    def __init__(
        self,
        image_size: int = 28,
        patch_size: int = 7,
        num_classes: int = 10,
        dim: int = 64,
        heads: int = 4,
        layers: int = 2,
        mlp_ratio: int = 2,
    ):
        super().__init__()
        if image_size % patch_size:
            raise ValueError(
                f"image_size {image_size} is not a multiple of patch_size {patch_size}"
            )
        self.patch_size = patch_size
        num_patches = (image_size // patch_size) ** 2
        self.patch_embedding = nn.Linear(patch_size * patch_size, dim)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.positions = nn.Parameter(torch.zeros(1 + num_patches, dim))
        self.encoder = Encoder(dim, heads, layers, num_classes, mlp_ratio)
        # Linear layers keep PyTorch's default (fan-in scaled) initialisation, as in the
        # vit-pytorch implementation the NGD paper used; plain SGD stalls from 0.02-std weights.
        nn.init.normal_(self.cls, std=0.02)
        nn.init.normal_(self.positions, std=0.02)

    def patches(self, images: torch.Tensor) -> torch.Tensor:
        """(B, H, W) → (B, num_patches, patch_size²), row-major over patches."""
        P = self.patch_size
        B, H, W = images.shape
        x = images.reshape(B, H // P, P, W // P, P).permute(0, 1, 3, 2, 4)
        return x.reshape(B, (H // P) * (W // P), P * P)

    def forward(self, pixels, output_attentions=False):
        x = self.patch_embedding(self.patches(pixels))
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.positions
        return self.encoder(x, None, output_attentions)

    def layer_groups(self) -> dict[str, list[nn.Parameter]]:
        """Parameters by layer, for per-layer norm growth: embedding, block0.., head."""
        groups = {"embedding": [self.cls, self.positions, *self.patch_embedding.parameters()]}
        for i, block in enumerate(self.encoder.blocks):
            groups[f"block{i}"] = list(block.parameters())
        groups["head"] = [*self.encoder.norm.parameters(), *self.encoder.head.parameters()]
        return groups

"""Shared fixtures for VGPU's Python tests."""

import os

import pytest

import vgpu


@pytest.fixture(scope="session")
def cache() -> vgpu.VGPUCache:
    """One cache for the session, on the backend VGPU_BACKEND chooses (default auto)."""
    return vgpu.VGPUCache()


@pytest.fixture(scope="session")
def require_gpu() -> bool:
    """Whether CI demands a GPU adapter (lavapipe at least): VGPU_REQUIRE_GPU=1."""
    return os.environ.get("VGPU_REQUIRE_GPU") == "1"

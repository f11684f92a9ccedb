import { MemoryApprovalStore } from "../../src/approval/memory-approval-store.ts";
import { runApprovalStoreContract } from "../contracts/approval-store.contract.ts";

runApprovalStoreContract("MemoryApprovalStore", { create: () => new MemoryApprovalStore() });

import type { components } from "./schema";

type Schemas = components["schemas"];

export type User = Schemas["User"];
export type TrainingJob = Schemas["TrainingJob"];
export type JobStatus = Schemas["StatusEnum"];
export type JobState = Schemas["TrainingJobStateEnum"];
export type JobNode = Schemas["Node"];
export type ProfilePart = Schemas["ProfilePart"];
export type DeletedJob = Schemas["DeletedJob"];
export type PartState = Schemas["ProfilePartStateEnum"];
export type LoadedProfile = Schemas["LoadedProfile"];
export type AppSettings = Schemas["AppSettings"];
export type AppSettingsRequest = Schemas["AppSettingsRequest"];
export type JobChanges = Schemas["PatchedTrainingJobRequest"];
export type TagCount = Schemas["TagCount"];
export type DiskUse = Schemas["DiskUse"];
export type RetentionPreview = Schemas["RetentionPreview"];
export type Page<T> = {
  count: number;
  next?: string | null;
  previous?: string | null;
  results: T[];
};
export type JobWindow = Schemas["Window"];
export type WindowKind = Schemas["TrainingJobWindowEnum"];
export type ApiToken = Schemas["ApiToken"];
export type NewApiToken = Schemas["NewApiToken"];
export type CreateApiTokenRequest = Schemas["CreateApiTokenRequest"];

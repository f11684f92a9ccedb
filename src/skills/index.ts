/**
 * Skills: prompt packages that add instructions and narrow the tools a chain may use.
 * @module
 */
export { MAX_SKILL_FILE_BYTES, SKILL_FILE, loadSkill, loadSkills } from "./load-skill.ts";
export { parseCommaList, parseFrontMatter, type FrontMatter } from "./parse-front-matter.ts";
export { MAX_SKILL_DESCRIPTION_CHARS, SKILL_NAME_PATTERN, defineSkill, type Skill, type SkillDefinition } from "./skill.ts";
